#pragma once
// Makes the configured policy (policy.kind) and the learner that trains it, so generators and the learner
// hold every kind through one interface (policies/policy.hpp).
#include <cstdint>
#include <memory>

#include "messages/expected.hpp"
#include "policies/grpo_trainer.hpp"
#include "policies/lm/lm_policy.hpp"
#include "policies/policy.hpp"
#include "policies/program_policy.hpp"
#include "policies/remote/remote_policy.hpp"

namespace crucible::policies {

struct policy_options {
  policy_kind kind = policy_kind::program;
  policy_config program;         ///< kind program: the transformer's shape and the target
  lm_policy_options lm;          ///< kind lm
  remote_policy_options remote;  ///< kind remote
};

/// A policy of `options.kind`: the program policy with fresh weights from `seed`, the language model from
/// options.lm.checkpoint, or a remote endpoint's client. Errors say what to fix (a checkpoint that does not
/// load, a shape that does not build).
expected<std::unique_ptr<policy>> make_policy(const policy_options& options, uint64_t seed);

/// The learner of `p` for `objective`: GRPO on the reward, or REINFORCE on a 0/1 correctness reward that
/// the caller put into each member's reward. A policy that cannot be trained here (remote) gets a learner
/// that counts what it is given and changes nothing. `p` must outlive the learner.
expected<std::unique_ptr<policy_learner>> make_learner(policy& p, const grpo_config& grpo,
                                                       learning_objective objective, uint64_t seed);

}  // namespace crucible::policies
