#pragma once
// Sampling from a decoder LM: n completions of one prompt, batched, the prompt prefilled once and its KV
// cache shared, then one token per step for every unfinished completion. Temperature, top-k and top-p
// (nucleus) filtering, stop tokens and stop sequences, a bound on new tokens, and the per-token log-probs
// the learner's ratio starts from. Deterministic in the seed (the draw is made on the host). On a CUDA
// device the decoding step is replayed from a CUDA graph.
#include <cstdint>
#include <functional>
#include <vector>

#include "messages/expected.hpp"
#include "policies/lm/decoder_lm.hpp"

namespace crucible::policies {

enum class finish_reason { stop, length };

struct sampling_options {
  int n = 1;
  double temperature = 1.0;  ///< <= 0: greedy (log-probs then at temperature 1)
  int64_t top_k = 0;         ///< 0: no top-k filter
  double top_p = 1.0;        ///< 1: no nucleus filter
  int64_t max_new_tokens = 256;
  std::vector<int64_t> stop_tokens;                  ///< e.g. the config's eos ids; kept in the completion
  std::vector<std::vector<int64_t>> stop_sequences;  ///< a completion ending in one stops (kept too)
  uint64_t seed = 1;
  /// On a CUDA device (CUDA builds): decode with a captured CUDA graph of the step (decode_graph.hpp),
  /// eagerly when capturing fails. The draws are the same; the logits agree to rounding.
  bool cuda_graphs = true;
};

struct lm_completion {
  std::vector<int64_t> tokens;
  /// log p(token) under softmax(logits / temperature) over the whole vocabulary — the distribution the
  /// learner recomputes; top-k/top-p only decide which tokens may be drawn.
  std::vector<float> logprobs;
  finish_reason finish = finish_reason::length;
};

/// Errors: an empty prompt, a token outside the vocabulary, n < 1, top_p outside (0, 1].
expected<std::vector<lm_completion>> sample_completions(decoder_lm& lm, const std::vector<int64_t>& prompt,
                                                        const sampling_options& options);

/// Log-probs of `completion` after `prompt` under the current weights at `temperature` (as sampled).
expected<std::vector<float>> completion_logprobs(decoder_lm& lm, const std::vector<int64_t>& prompt,
                                                 const std::vector<int64_t>& completion, double temperature);

}  // namespace crucible::policies
