#pragma once
// Internal to policies/: the per-token GRPO objective both learners minimise — the program policy's on its
// choice tokens (grpo_trainer) and the language model's on completion tokens (lm/lm_grpo_trainer): the
// clipped importance-weighted advantage (DAPO's asymmetric upper clip), the k3 estimate of the KL to the
// frozen reference, and each variant's token weight. Includes LibTorch: include only from .cpp files.
#include <cstddef>
#include <string>

#include <torch/torch.h>

#include "policies/grpo_trainer.hpp"

namespace crucible::policies {

/// Keeps exp() finite for very stale samples.
constexpr double grpo_max_log_ratio = 20.0;

bool known_grpo_variant(const std::string& v);

struct grpo_token_terms {
  torch::Tensor term;     ///< per-token loss before weighting: -surrogate + kl_coef * k3
  torch::Tensor ratio;    ///< importance ratio to the sampling policy
  torch::Tensor k3;       ///< per-token KL estimate to the reference
  torch::Tensor clipped;  ///< bool: the clip bound the surrogate
};

/// `lp`: log-probs of the taken tokens under the current weights; `old_lp` at sampling; `ref_lp` under the
/// reference; `adv` each token's advantage. All [N].
grpo_token_terms grpo_terms(const torch::Tensor& lp, const torch::Tensor& old_lp, const torch::Tensor& ref_lp,
                            const torch::Tensor& adv, const grpo_config& cfg);

/// What one epoch's chunks add up to, and the step statistics they make (means over the trained tokens).
struct grpo_epoch_sums {
  double loss = 0, kl = 0, entropy = 0, clipped = 0, ratio_max = 0;
  /// Adds a chunk: its weighted loss, its terms and its per-token entropy.
  void add(const torch::Tensor& loss_value, const grpo_token_terms& terms,
           const torch::Tensor& token_entropy);
  void record(step_stats& stats, size_t tokens) const;
};

/// A token's loss weight: grpo — token mean per sample, mean over samples; dr_grpo — sequence sum over a
/// fixed norm (the longest sample); dapo — token mean over the batch.
double grpo_token_weight(const std::string& variant, size_t samples, size_t tokens_in_sample, size_t longest,
                         size_t total_tokens);

}  // namespace crucible::policies
