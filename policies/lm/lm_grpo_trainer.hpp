#pragma once
// GRPO, DAPO and Dr. GRPO for the decoder LM, on completion tokens only (the prompt is context, never
// trained): group-normalised advantages, the clipped surrogate against the sampling log-probs, k3 KL to a
// frozen reference, AdamW. Samples go through the network in right-padded micro-batches. Log-probs over a
// large vocabulary are computed a chunk of positions at a time (the hidden states are cut from the graph and
// their gradient carried back), so no [tokens, vocabulary] matrix of the whole batch is ever held. Options
// trade compute for memory (activation checkpointing) and precision for speed (bf16 autocast on CUDA).
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
  /// Sequences per forward pass (right-padded to the longest of them); gradients accumulate across
  /// micro-batches, so the update does not depend on it — memory and speed do.
  int64_t micro_batch = 8;
  /// CUDA only (ignored on the CPU): forward passes under bf16 autocast; the weights and AdamW's moments stay
  /// in their own dtype (fp32 master weights when the model was placed as f32), log-softmax in fp32.
  bool bf16 = false;
  /// Recompute each decoder layer's activations in the backward pass instead of keeping them: memory for
  /// about one more forward pass of compute. Same update.
  bool checkpoint_activations = false;
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

  /// The optimizer's state (AdamW's moments and step counts) and the frozen reference's weights, so a
  /// learner resumes where it stopped; the policy's weights are the owner's to save (decoder_lm::save).
  std::vector<char> save_state() const;
  /// Restores what save_state wrote, for a model of the same configuration. A bad or mismatched state is an
  /// error and leaves the trainer as it was. The configured learning rate wins over the saved one.
  status load_state(const std::vector<char>& bytes);

  /// Updates made so far (optimizer steps, one per epoch of each step()).
  int64_t steps() const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace crucible::policies
