#pragma once
// Supervised next-token training of the decoder LM on (prompt, completion) token pairs: the loss is the
// completion tokens' negative log-likelihood, the prompt being context only. CUDA-L1's supervised stage, and
// its self-supervised stage too: REINFORCE with a 0/1 reward on on-policy samples is this loss on the
// correct samples, which is why each example carries a weight. AdamW with linear warm-up and an optional
// cosine decay; gradients clipped by norm. Sequences go through the network in right-padded micro-batches,
// and log-probs over the vocabulary a chunk of positions at a time (as lm_grpo_trainer).
#include <cstdint>
#include <memory>
#include <vector>

#include "messages/expected.hpp"
#include "policies/lm/decoder_lm.hpp"

namespace crucible::policies {

struct lm_example {
  std::vector<int64_t> prompt;      ///< context, at least one token (a BOS will do); never trained
  std::vector<int64_t> completion;  ///< the trained tokens, at least one
  double weight = 1.0;              ///< >= 0; the example's tokens count this much in the token mean
};

struct lm_sft_options {
  double lr = 3e-4;  ///< peak learning rate
  double weight_decay = 0.01;
  double max_grad_norm = 1.0;  ///< <= 0: no clipping
  /// Linear warm-up: step k (from 1) uses lr * min(1, k / warmup_steps).
  int64_t warmup_steps = 20;
  /// 0: constant lr after the warm-up. Otherwise a cosine from lr down to lr / 10 at step total_steps
  /// (and lr / 10 after it): lr * (0.1 + 0.45 * (1 + cos(pi * (k - warmup) / (total - warmup)))).
  int64_t total_steps = 0;
  /// Examples per forward pass (right-padded to the longest); gradients accumulate across micro-batches, so
  /// the update does not depend on it.
  int64_t micro_batch = 8;
  int64_t logit_elements = 1 << 22;  ///< positions per log-softmax chunk = this / vocabulary size
  /// CUDA only (ignored on the CPU): forward passes under bf16 autocast, weights and moments in their own
  /// dtype (fp32 master weights when the model was placed as f32), log-softmax in fp32.
  bool bf16 = false;
  /// Recompute each decoder layer's activations in the backward pass instead of keeping them. Same update.
  bool checkpoint_activations = false;
};

/// The learning rate of step `k` (1 for the first step) under `options`' schedule.
double lm_sft_learning_rate(const lm_sft_options& options, int64_t k);

struct lm_sft_stats {
  double loss = 0;       ///< weighted mean completion-token loss (nats), before the update
  int64_t tokens = 0;    ///< completion tokens with a non-zero weight
  int64_t examples = 0;  ///< examples in the batch
  double grad_norm = 0;  ///< before clipping
  double lr = 0;         ///< the rate this step used (0 when nothing was trained)
};

/// Thread contract: owns the model it trains while a call runs; one thread.
class lm_sft_trainer {
 public:
  /// `lm` must outlive the trainer.
  lm_sft_trainer(decoder_lm& lm, const lm_sft_options& options);
  ~lm_sft_trainer();

  /// One optimizer step over the whole batch (micro-batches accumulate). The loss is the mean over the
  /// batch's completion tokens, each weighted by its example's weight: sum(w * nll) / sum(w * tokens). A
  /// batch whose weights are all 0 trains nothing and takes no step. Errors (nothing changes): an empty
  /// prompt or completion, a token outside the vocabulary, a negative or non-finite weight.
  expected<lm_sft_stats> step(const std::vector<lm_example>& batch);

  /// The same weighted mean completion-token loss, without an update (no gradients kept).
  expected<double> evaluate(const std::vector<lm_example>& batch);

  /// AdamW's moments and the step count (the schedule's position); the weights are the owner's to save.
  std::vector<char> save_state() const;
  /// Restores what save_state wrote for a model of the same configuration; a bad or mismatched state is an
  /// error and leaves the trainer as it was.
  status load_state(const std::vector<char>& bytes);

  /// Optimizer steps taken so far.
  int64_t steps() const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace crucible::policies
