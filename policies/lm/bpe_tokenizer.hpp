#pragma once
// Hugging Face's byte-level BPE (tokenizer.json), as GPT-2, Qwen2 / Qwen2.5 / Qwen3 and Llama 3 use it: added
// tokens split off first, then the normalizer (none or NFC), the pre-tokenizer (Split with a regex and/or
// ByteLevel, in a Sequence), GPT-2's byte-to-unicode alphabet and merges by rank (with Llama 3's
// ignore_merges). Ids match `tokenizers`' encode(text, add_special_tokens=False). PCRE2, ICU and the JSON
// library stay in the .cpp.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "messages/expected.hpp"

namespace crucible::policies {

class bpe_tokenizer {
 public:
  /// Reads tokenizer.json; errors name the file and the key (an unsupported model type, normalizer,
  /// pre-tokenizer or decoder, a malformed vocab, merge or added token, a split pattern PCRE2 rejects).
  static expected<bpe_tokenizer> load(const std::string& tokenizer_json_path);
  static expected<bpe_tokenizer> parse(const std::string& tokenizer_json_text);

  bpe_tokenizer(bpe_tokenizer&&) noexcept;
  bpe_tokenizer& operator=(bpe_tokenizer&&) noexcept;
  ~bpe_tokenizer();

  /// The ids of `text`, with no BOS/EOS added (the post-processor is kept for to_json but not applied).
  /// Added tokens are matched first; with parse_special false the special ones are ordinary text (the
  /// non-special added tokens still match). Bytes that are not UTF-8 are encoded as their byte tokens, so
  /// decode(encode(x)) == x for any bytes. Safe to call from several threads at once (the word cache locks).
  std::vector<int64_t> encode(const std::string& text, bool parse_special = true) const;

  /// The bytes `ids` stand for: byte-level tokens mapped back to bytes, added tokens as their text. Unlike
  /// `tokenizers`, invalid UTF-8 is returned as is (not replaced by U+FFFD); unknown ids are skipped.
  std::string decode(const std::vector<int64_t>& ids, bool skip_special = false) const;

  /// The pieces of ordinary text the BPE model sees, as raw bytes (after added tokens are split off, the
  /// normalizer and the pre-tokenizer; a prefix space included). Added tokens are boundaries, left out.
  std::vector<std::string> pre_tokenize(const std::string& text, bool parse_special = true) const;

  int64_t vocab_size() const;  ///< largest id + 1 over the vocab and the added tokens
  /// The id of a vocab token in its byte-level spelling ("Ġthe"), or of an added token by its text.
  std::optional<int64_t> token_id(const std::string& token) const;
  std::string token_text(int64_t id) const;  ///< the inverse of token_id; "" for an unknown id
  bool is_special(int64_t id) const;         ///< an added token marked special

  /// A tokenizer.json that `tokenizers` loads and that encodes as this one does (merges as "a b" strings
  /// where no token holds a space, which every version of `tokenizers` reads).
  std::string to_json() const;
  status save(const std::string& path) const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
  explicit bpe_tokenizer(std::unique_ptr<impl> p);
  static expected<bpe_tokenizer> parse_from(const std::string& text, const std::string& origin);
};

/// GPT-2's byte-level alphabet: each byte spelled as one printable code point (space as "Ġ", newline as
/// "Ċ"), the spelling vocab.json and merges use.
std::string byte_level_spelling(std::string_view bytes);
/// The bytes a byte-level spelling stands for; a code point outside the alphabet stays as its UTF-8.
std::string byte_level_bytes(std::string_view spelling);

}  // namespace crucible::policies
