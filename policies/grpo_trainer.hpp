#pragma once
// GRPO on scored groups (DESIGN.md §3, CUDA-L1): per group, rewards are standardized and clipped to
// ±reward_clip (CUDA-L1's smoothing) to give each sample's advantage; the loss is the clipped importance
// ratio objective against the *sampling* policy's log-probs (which also corrects for stale samples), plus a
// KL penalty to a frozen reference policy. Variants: grpo (token-mean per sample), dr_grpo (no std
// normalization, sequence-sum divided by a fixed length: the longest sample of the batch), dapo (asymmetric
// clip, token-level mean over the batch, groups with zero reward variance skipped). Only choice tokens of
// decisions with more than one legal option carry a log-probability, so only they enter the loss; the KL
// term is the k3 estimator exp(ref - lp) - (ref - lp) - 1 on those tokens.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "messages/expected.hpp"
#include "messages/scored.hpp"
#include "messages/task.hpp"
#include "policies/program_policy.hpp"

namespace crucible::policies {

struct grpo_config {
  std::string variant = "grpo";  ///< grpo | dr_grpo | dapo
  double lr = 1e-3;
  double clip = 0.2;        ///< ratio clip (lower bound for dapo)
  double clip_high = 0.28;  ///< dapo's upper ratio clip
  double kl_coef = 0.02;
  double reward_clip = 1.5;
  double max_grad_norm = 1.0;
  double entropy_coef = 0.0;
  int32_t epochs = 1;        ///< passes over each batch (one optimizer step each)
  double temperature = 1.0;  ///< the generators' sampling temperature: log-probs are recomputed under it,
                             ///< so the ratio to the stored sampling log-probs starts at 1
};

/// What one step saw; loss, kl, clip_fraction, entropy, ratio_max and grad_norm are of its last epoch,
/// means over the choice tokens that entered the loss.
struct step_stats {
  double loss = 0.0;
  double kl = 0.0;
  double clip_fraction = 0.0;
  double entropy = 0.0;
  double advantage_abs_mean = 0.0;
  int32_t samples = 0;
  int32_t skipped_groups = 0;   ///< groups that carried no signal (all rewards equal)
  int32_t skipped_samples = 0;  ///< members whose tokens did not replay on their task (logged, not trained)
  int32_t tokens = 0;           ///< choice tokens (decisions with >1 legal option) that entered the loss
  double ratio_max = 0.0;       ///< largest importance ratio seen (stale samples drive it up)
  double grad_norm = 0.0;       ///< gradient norm before clipping (last epoch)
};

/// Thread contract: owns the policy it trains while a step runs; one thread.
class grpo_trainer {
 public:
  /// The reference policy is a frozen copy of `policy` as it is now. `policy` must outlive the trainer.
  /// A step is deterministic (one full-batch optimizer step per epoch), so `seed` is reserved for
  /// minibatch shuffling.
  grpo_trainer(program_policy& policy, const grpo_config& config, uint64_t seed);
  ~grpo_trainer();

  /// One update on `groups`. Each member's candidate carries its context, tokens and sampling log-probs;
  /// `tasks` gives the task of each group (to replay the decision masks).
  expected<step_stats> step(const std::vector<scored_group>& groups,
                            const std::map<std::string, task_spec>& tasks);

  /// Policy, reference policy and optimizer state, for checkpoints.
  std::vector<char> save_state() const;
  status load_state(const std::vector<char>& bytes);

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// Group-normalized, clipped advantages for one group's rewards (exposed for tests and metrics).
std::vector<double> group_advantages(const std::vector<double>& rewards, const std::string& variant,
                                     double clip);

}  // namespace crucible::policies
