#pragma once
// The language-model policy (policy.kind: lm): a decoder LM and its byte-level BPE tokenizer that read
// CUDA-L1's contrastive prompt and write an answer in three sections, whose code block is the candidate.
// Its model lives in a Hugging Face directory (config.json, model.safetensors, tokenizer.json): a user's
// checkpoint, or the one the sft stage trains for the run. An answer without usable code is a candidate
// with a format error (no compile). LibTorch stays in the .cpp files.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "policies/lm/bpe_tokenizer.hpp"
#include "policies/lm/chat_template.hpp"
#include "policies/lm/decoder_lm.hpp"
#include "policies/lm/lm_policy_options.hpp"
#include "policies/policy.hpp"

namespace crucible::policies {

/// The end of an answer in plain framing (a special token of every tokenizer Crucible trains).
inline constexpr const char* end_of_text = "<|endoftext|>";

/// Thread contract: not thread-safe; one owner at a time.
class lm_policy final : public policy {
 public:
  /// options.checkpoint's model and tokenizer, placed on options.device.
  static expected<std::unique_ptr<lm_policy>> load(const lm_policy_options& options);
  /// A given model and tokenizer (the sft stage's fresh model); errors when their vocabularies disagree.
  static expected<std::unique_ptr<lm_policy>> from_parts(std::unique_ptr<decoder_lm> lm,
                                                         bpe_tokenizer tokenizer,
                                                         const lm_policy_options& options);
  ~lm_policy() override;

  policy_kind kind() const override { return policy_kind::lm; }
  expected<std::vector<policy_candidate>> sample(const prompt& p, int n, double temperature,
                                                 uint64_t seed) override;
  expected<std::vector<float>> log_probs(const task_spec& task, const std::vector<int32_t>& context,
                                         const std::vector<int32_t>& tokens, double temperature) override;
  std::vector<char> save_weights() const override;
  status load_weights(const std::vector<char>& bytes) override;
  int64_t parameter_count() const override;
  bool trainable() const override { return true; }

  /// The framed prompt's tokens (exemplars dropped to leave max_new_tokens of room) and its text.
  expected<std::vector<int64_t>> encode_prompt(const prompt& p, std::string* text = nullptr) const;
  /// The tokens an answer is trained as after encode_prompt(): the answer and the end of the turn.
  std::vector<int64_t> encode_answer(const std::string& answer) const;

  /// Writes DIR as a Hugging Face model directory (config.json, model.safetensors, tokenizer.json).
  status save(const std::string& dir) const;

  decoder_lm& model();
  const bpe_tokenizer& tokenizer() const;
  const lm_policy_options& options() const;
  chat_family framing() const;

 private:
  struct impl;
  explicit lm_policy(std::unique_ptr<impl> i);
  std::unique_ptr<impl> impl_;
};

}  // namespace crucible::policies
