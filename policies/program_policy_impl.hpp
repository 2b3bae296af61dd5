#pragma once
// Internal to policies/: the inside of program_policy, shared with grpo_trainer (a friend), and the batched
// scoring of stored samples that the learner needs. Includes LibTorch: include only from .cpp files here.
#include <cstdint>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "policies/program_policy.hpp"
#include "policies/program_tokenizer.hpp"
#include "policies/transformer.hpp"

namespace crucible::policies {

struct program_policy::impl {
  impl(const policy_config& c, uint64_t seed);

  /// Program tokens reserved in the context for `t`: an upper estimate of its program's length, so the
  /// prompt is cut before the program would run past max_context (positions past it are clamped anyway).
  int32_t program_reserve(const task_spec& t) const;

  policy_config config;
  program_tokenizer tokenizer;
  causal_transformer model{nullptr};
};

/// One stored sample made ready for scoring: the full token sequence (context, then program tokens) and
/// its decisions with more than one legal option (the only tokens that carry a log-probability).
struct replayed_sample {
  std::vector<int32_t> sequence;
  int32_t context_length = 0;
  std::vector<decision_tokens> decisions;  ///< choice_index is into the program tokens
};

/// A padded batch of samples and, flattened over them, every scored decision.
struct decision_batch {
  torch::Tensor tokens;      ///< [B, T] int64, right-padded with <pad>
  torch::Tensor row;         ///< [N] int64: the sample of each decision
  torch::Tensor col;         ///< [N] int64: the position whose output predicts the choice (its slot token)
  torch::Tensor legal;       ///< [N, O] int64 legal choice tokens, padded with 0
  torch::Tensor legal_mask;  ///< [N, O] bool
  torch::Tensor chosen;      ///< [N, 1] int64 index into legal
  std::vector<int64_t> sample_of;  ///< row as a vector, for host-side bookkeeping
};

decision_batch make_decision_batch(const std::vector<const replayed_sample*>& samples);

/// Log-probabilities over each decision's legal options [N, O] (-inf on padding), at `temperature`.
torch::Tensor legal_log_probs(causal_transformer& model, const decision_batch& batch, double temperature);

/// Writes parameters with an architecture header; reads them back after checking it.
void write_parameters(torch::serialize::OutputArchive& ar, const std::string& prefix,
                      causal_transformer& model, const program_tokenizer& tok);
status read_parameters(torch::serialize::InputArchive& ar, const std::string& prefix,
                       causal_transformer& model, const program_tokenizer& tok);

/// Copies every parameter of `from` into `to` (same architecture).
void copy_parameters(causal_transformer& from, causal_transformer& to);

}  // namespace crucible::policies
