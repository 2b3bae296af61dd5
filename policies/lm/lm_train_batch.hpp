#pragma once
// Internal to policies/: what the decoder LM's learners (lm_grpo_trainer, lm_sft_trainer) share about a
// training forward — sequences grouped into micro-batches, right-padded into one [B, T] forward (causal
// attention: padding after a sequence changes nothing before it), the hidden states at the positions that
// predict completion tokens, log-probs over the vocabulary a chunk of positions at a time, and a check of a
// saved optimizer state. Includes
// LibTorch: include only from .cpp files.
#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "policies/lm/decoder_model.hpp"

namespace crucible::policies {

/// One micro-batch: its sequences right-padded into one tensor, and where each completion token sits.
/// Completion tokens are laid out sequence after sequence, in the order of `members`.
struct lm_train_batch {
  torch::Tensor ids;             ///< [B, T] int64, right-padded with token 0 (never attended by a real token)
  torch::Tensor rows;            ///< [N] int64: the flattened [B * T] position that predicts each token
  torch::Tensor targets;         ///< [N] int64: the completion tokens
  std::vector<size_t> members;   ///< index of each row's sequence in the caller's list
  std::vector<int64_t> offsets;  ///< where each member's tokens start in [0, N); offsets.back() == N
  int64_t tokens() const { return offsets.empty() ? 0 : offsets.back(); }
};

/// Groups sequences of `lengths` into micro-batches of at most `size` (< 1 counts as 1), longest first, so
/// sequences of like length share a forward and padding stays small. Returns indices into `lengths`.
std::vector<std::vector<size_t>> micro_batches(const std::vector<int64_t>& lengths, int64_t size);

/// The micro-batch of sequences `members`: prompt (at least one token) then completion (at least one).
lm_train_batch make_train_batch(const std::vector<const std::vector<int64_t>*>& prompts,
                                const std::vector<const std::vector<int64_t>*>& completions,
                                const std::vector<size_t>& members, const torch::Device& device);

/// Final hidden states [N, H] at the rows of `batch`; with `checkpoint`, the layers recompute their
/// activations in the backward pass (decoder_model::hidden_checkpointed).
torch::Tensor completion_hidden(decoder_model& net, const lm_train_batch& batch, bool checkpoint);

/// Positions per log-softmax chunk: the [positions, vocabulary] block stays under `budget` elements.
int64_t chunk_positions(int64_t vocab, int64_t budget);

/// Log-softmax of the logits of `h` [n, H] at `temperature`, in fp32 ([n, vocab]), and its entries at
/// `targets` [n].
struct lm_chunk_logprobs {
  torch::Tensor scaled, taken;
};
lm_chunk_logprobs chunk_logprobs(decoder_model& net, const torch::Tensor& h, const torch::Tensor& targets,
                                 double temperature);

/// Throws when the AdamW state in `archive` does not fit parameters shaped like `params`: a scratch optimizer
/// over zero copies loads it and each moment's shape is checked (loading alone matches saved states to
/// parameters by position, unchecked, and a mismatch would surface only at the next step).
void probe_adamw_state(const std::vector<torch::Tensor>& params, torch::serialize::InputArchive& archive);

/// True when the model's weights are on a CUDA device (where bf16 autocast applies).
bool on_cuda(decoder_model& net);

}  // namespace crucible::policies
