#pragma once
// The policy a role makes from the config (policy.kind and its settings), for the generators and the
// learner alike: one mapping of the policy section onto policies::policy_options.
#include "policies/policy_factory.hpp"
#include "runtime/config/config.hpp"

namespace crucible::actors {

/// `for_training`: the learner's copy (the language model in fp32, whatever policy.lm.dtype says).
expected<policies::policy_options> policy_options_of(const runtime::config& cfg, bool for_training);

/// The stage a single-stage run trains for: its learner's objective (REINFORCE on correctness for
/// self_supervised, GRPO otherwise).
policies::learning_objective objective_of(const runtime::config& cfg);

}  // namespace crucible::actors
