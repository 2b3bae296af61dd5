#pragma once
// The wire form of one pipeline stage's work (docs/wire_protocol.md, "Pipeline stages"). A work item for
// stage S carries the candidate as scored so far (a scored_candidate envelope) and, after it, the pieces a
// built-in stage's request takes as envelopes of their own (candidate; compile_result; bench_result), so a
// worker in any language reads what it needs by kind. The benchmark stage's best_seen travels in args.
// The answer is one envelope: compile_result (compile), bench_result (benchmark), verdict (verify), and for
// a custom stage a scored_candidate (the candidate, amended) or a verdict (which replaces the verdict).
#include <string>

#include "messages/cluster.hpp"
#include "messages/expected.hpp"
#include "messages/scored.hpp"

namespace crucible::runtime {

/// A stage's request as a node receives it.
struct stage_request {
  std::string stage;
  scored_candidate scored;
  double best_seen = 0.0;
};

work_item encode_stage_work(const std::string& stage, const std::string& role, const scored_candidate& s,
                            double best_seen, double timeout_s, int attempt);

/// Errors: no scored_candidate envelope, an undecodable one.
expected<stage_request> decode_stage_work(const work_item& item);

/// Folds a stage's answer (work_result.payload) into `s`: compile -> s.compiled, benchmark -> s.bench,
/// verify -> s.judged, custom -> s, or, when a custom stage answers with a verdict, a second opinion that
/// convicts but never acquits (a pass only adds its evidence and its review, if any; any other outcome
/// replaces the verdict, the earlier evidence kept). Errors: a result that is not ok (its error text), no
/// payload, an envelope of the wrong kind for the stage.
status apply_stage_result(const std::string& stage, const work_result& result, scored_candidate& s);

}  // namespace crucible::runtime
