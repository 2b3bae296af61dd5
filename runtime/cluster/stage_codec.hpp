#pragma once
// The wire form of one pipeline stage's work (docs/wire_protocol.md, "Pipeline stages"). A work item for
// stage S carries the candidate as scored so far (a scored_candidate envelope) and, after it, the pieces a
// built-in stage's request takes as envelopes of their own (candidate; compile_result; bench_result), so a
// worker in any language reads what it needs by kind. The benchmark stage's best_seen travels in args.
// The answer is one envelope: compile_result (compile), bench_result (benchmark), and for a custom stage a
// verdict or a scored_candidate (whose verdict is read as a second opinion). Verify and the judge stay on
// the head.
#include <string>

#include "messages/cluster.hpp"
#include "messages/expected.hpp"
#include "messages/scored.hpp"
#include "messages/stage_request.hpp"

namespace crucible::runtime {

/// The head's side: the stage message as a work item for a peer serving `role`.
work_item encode_stage_work(const stage_request& req, const std::string& role, double timeout_s, int attempt);

/// A node's side: the work item as the stage message its local member answers. Errors: no
/// scored_candidate envelope, an undecodable one.
expected<stage_request> decode_stage_work(const work_item& item);

/// A node's side: the answer of its member to `item` as the work result the head reads, the stage's slot
/// alone (compile_result, bench_result, verdict, or the whole scored_candidate of a custom stage).
work_result encode_stage_answer(const work_item& item, const scored_candidate& answer);

/// Folds a stage's answer from a node (work_result.payload) into `s`: compile -> s.compiled, benchmark ->
/// s.bench. A custom stage's answer (a verdict, or a scored_candidate of which only the verdict is read) is a
/// second opinion that convicts but never acquits and never pays more: a pass only adds its evidence, flags
/// and review; any other outcome replaces the verdict, the earlier evidence kept, at no more reward or
/// speedup than before. Errors: a stage that gives verdicts (verify, judge: made on the head, never taken
/// from the wire), a result that is not ok (its error text), no payload, an envelope of the wrong kind.
status apply_stage_result(const std::string& stage, const work_result& result, scored_candidate& s);

}  // namespace crucible::runtime
