#pragma once
// Trains a byte-level BPE tokenizer from text, as Qwen2's is made: NFC, the Qwen2 split pattern, GPT-2's
// byte alphabet. The result is a bpe_tokenizer whose to_json() `tokenizers` (Python) loads and encodes with
// the same ids. Used to make the default LM's tokenizer from the project's own corpus (DESIGN.md §7).
#include <cstdint>
#include <string>
#include <vector>

#include "messages/expected.hpp"
#include "policies/lm/bpe_tokenizer.hpp"

namespace crucible::policies {

struct bpe_training_options {
  int64_t vocab_size = 8192;  ///< the result's size: 256 byte tokens, the merges' tokens, the special tokens
  int64_t min_frequency = 2;  ///< a pair seen fewer times is never merged (training then stops early)
  std::vector<std::string> special_tokens;  ///< added after the BPE vocab, in order; never split or merged
};

/// Ids 0-255 are the bytes (id = byte value); then one token per merge, the most frequent pair over the
/// corpus's pre-tokens first (ties: the pair of lower ids); then the special tokens. Special tokens in the
/// corpus are boundaries, not training text. Pair counts are updated incrementally: on one core, an 8k vocab
/// from ~5 MB of source takes seconds. Errors: a vocab_size below 256 + the special tokens, min_frequency
/// below 1, an empty, repeated or non-UTF-8 special token.
expected<bpe_tokenizer> train_bpe(const std::vector<std::string>& corpus, const bpe_training_options& o);

}  // namespace crucible::policies
