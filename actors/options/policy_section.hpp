#pragma once
// policy.*: the policy's shape (policies/program_policy.hpp) and the LibTorch threads it runs on, in the
// generators and the learner alike. The policy decodes programs of the run's target.
#include <cstdint>

#include "policies/program_policy.hpp"

namespace crucible::actors {

struct policy_section : policies::policy_config {
  static constexpr const char* section_name = "policy";
  int64_t threads = 1;  ///< LibTorch intra-op threads of the policy
};

}  // namespace crucible::actors
