#pragma once
// GRPO, DAPO and Dr. GRPO for the decoder LM, on completion tokens only (the prompt is context, never
// trained): group-normalised advantages, the clipped surrogate against the sampling log-probs, k3 KL to a
// frozen reference, AdamW. Log-probs over a large vocabulary are computed a chunk of positions at a time
// (the hidden states are cut from the graph and their gradient carried back), so no [tokens, vocabulary]
// matrix of the whole batch is ever held.
#include <cstdint>
#include <memory>
#include <vector>

#include "messages/expected.hpp"
#include "policies/grpo_trainer.hpp"
#include "policies/lm/decoder_lm.hpp"

namespace crucible::policies {

struct lm_sample {
  std::vector<int64_t> prompt;
  std::vector<int64_t> completion;
  std::vector<float> logprobs;  ///< per completion token, at sampling (lm_completion::logprobs)
  double reward = 0.0;
};

struct lm_group {
  std::vector<lm_sample> members;
};

struct lm_train_options {
  grpo_config grpo;  ///< variant, lr, clips, kl_coef, reward_clip, max_grad_norm, epochs, temperature
  double weight_decay = 0.0;  ///< AdamW's decoupled decay
  int64_t logit_elements =
      1 << 22;  ///< positions per log-softmax chunk = this / vocabulary size (at least 1)
};

/// Thread contract: owns the model it trains while a step runs; one thread.
class lm_grpo_trainer {
 public:
  /// The reference is a frozen copy of `lm` as it is now. `lm` must outlive the trainer.
  lm_grpo_trainer(decoder_lm& lm, const lm_train_options& options);
  ~lm_grpo_trainer();

  /// One update (one optimizer step per epoch over the whole batch). Errors: an unknown variant, a sample
  /// whose log-probs do not match its completion or whose tokens are outside the vocabulary.
  expected<step_stats> step(const std::vector<lm_group>& groups);

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace crucible::policies
