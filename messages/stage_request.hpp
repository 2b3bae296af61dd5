#pragma once
// One pipeline stage's work as the actor serving it receives it. Every stage's role answers the same
// message, (stage_atom, stage_request) -> scored_candidate: the built-in compiler, benchmarker and verifier,
// the judge, a plugin's stage and the proxy of a remote peer's. The answer is the candidate with the
// stage's result slot filled (runtime/pipeline/pipeline_stages says which). In process only: on the wire the
// same work travels as a work_item (runtime/cluster/stage_codec).
#include <string>

#include "messages/scored.hpp"

namespace crucible {

struct stage_request {
  std::string stage;        ///< compile, benchmark, verify, or a custom stage's name
  scored_candidate scored;  ///< the candidate as scored so far
  /// The task's best verified speedup so far: a benchmark measures a speedup far above it again.
  double best_seen = 0.0;
};

}  // namespace crucible
