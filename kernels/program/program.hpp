#pragma once
// A program is what the program policy writes: which exact algebraic rewrites to apply to the task's chain,
// how to cut the (rewritten) chain into fused kernels ("groups"), and for each group a strategy and its
// knobs. Emitters turn a program into source under the candidate ABI. The text form is what exemplars,
// logs and the replay buffer show.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "messages/expected.hpp"

namespace crucible::kernels {

/// One fused kernel: ops [first, last] of the rewritten chain (inclusive).
struct group_plan {
  int32_t first = 0;
  int32_t last = 0;
  std::string strategy;
  std::map<std::string, std::string> knobs;
  bool operator==(const group_plan& o) const {
    return first == o.first && last == o.last && strategy == o.strategy && knobs == o.knobs;
  }
};

struct program {
  std::vector<std::string> rewrites;  ///< applied in this order
  std::vector<group_plan> groups;     ///< cover the rewritten chain in order, without gaps
  bool operator==(const program& o) const { return rewrites == o.rewrites && groups == o.groups; }
};

/// "rewrites: a,b | [0-2] simd math=poly unroll=4 | [3] online acc=8" ("rewrites: -" when none). Knobs are
/// written in name order (std::map), so equal programs have equal text: the replay buffer dedupes on it.
/// A group of one op is "[i]", otherwise "[first-last]".
std::string to_text(const program& p);

/// Inverse of to_text (parse_program(to_text(p)) == p); errors say which part did not parse. Only the
/// syntax is checked here: whether the program fits a task is validate_program's job.
expected<program> parse_program(std::string_view text);

}  // namespace crucible::kernels
