#pragma once
// self_supervised.*: CUDA-L1's second stage: sample, compile, check, and train on the correct candidates
// (REINFORCE with a 0/1 reward), until the correct rate stops rising or the budget ends.
#include <cstdint>

namespace crucible::actors {

struct self_supervised_section {
  static constexpr const char* section_name = "self_supervised";
  int64_t max_steps = 30;   ///< learner steps at most
  double max_minutes = 10;  ///< time budget
  /// The stage ends once the correct rate, averaged over `plateau_steps` steps, has not beaten its best
  /// by `min_gain` for `plateau_steps` steps in a row.
  int64_t plateau_steps = 4;
  double min_gain = 0.02;
};

}  // namespace crucible::actors
