#pragma once
// What the policy is told about one of its earlier attempts when refinement is on (replay.refine_turns):
// the attempt's own text and a short account of what came of it — the compiler's first diagnostics, the
// check that failed, the verifier's flags, or the verified speedup. Attempts that tell the policy nothing
// about its code (an evaluation that failed on our side, an abandoned candidate) are not fed back.
#include <optional>

#include "messages/prompt.hpp"
#include "messages/scored.hpp"

namespace crucible::runtime {

/// The attempt `c` as a refinement turn, or nullopt when its outcome says nothing about its code.
std::optional<attempt> attempt_of(const scored_candidate& c, const std::string& target);

}  // namespace crucible::runtime
