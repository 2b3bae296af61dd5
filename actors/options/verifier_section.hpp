#pragma once
// verifier.*: the verifier role's rules (kernels/verify/judge.hpp): the penalty a convicted or failed
// candidate is rewarded with and the largest speedup it believes without review.
#include "kernels/verify/judge.hpp"

namespace crucible::actors {

struct verifier_section : kernels::judge_options {
  static constexpr const char* section_name = "verifier";
};

}  // namespace crucible::actors
