#pragma once
// A decoder-only language model (Qwen2 / Qwen2.5(-Coder), Llama 3) behind a LibTorch-free interface: made
// fresh from a Hugging Face config, or loaded from a checkpoint directory (config.json + safetensors), and
// saved in the same layout. The sampler and the token-level learner use its inside (decoder_model.hpp).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "messages/expected.hpp"
#include "policies/lm/decoder_config.hpp"
#include "policies/lm/safetensors.hpp"

namespace crucible::policies {

struct decoder_model_holder;

/// Thread contract: not thread-safe; one owner at a time.
class decoder_lm {
 public:
  /// Fresh weights, deterministic in `seed`; errors when the config is not buildable.
  static expected<std::unique_ptr<decoder_lm>> create(const decoder_config& config, uint64_t seed);
  /// DIR/config.json and its weights (model.safetensors, or the index and its shards), as fp32 on the CPU.
  static expected<std::unique_ptr<decoder_lm>> load(const std::string& dir);
  ~decoder_lm();

  /// Moves the weights to `device` ("cpu", "cuda", "cuda:1") as `dtype` (f32, f16 or bf16); an error
  /// when LibTorch has no such device.
  status place(const std::string& device, tensor_dtype dtype);

  /// Writes the checkpoint layout other tools read (see lm_checkpoint.hpp).
  status save(const std::string& dir, tensor_dtype dtype = tensor_dtype::f32, int64_t max_shard_bytes = 0);

  /// Next-token logits after each position of `tokens` (one sequence from position 0): tokens.size() rows of
  /// vocab_size values. Errors for a token outside the vocabulary.
  expected<std::vector<float>> logits(const std::vector<int64_t>& tokens);

  const decoder_config& config() const;
  int64_t parameter_count() const;

  decoder_model_holder& model();

 private:
  decoder_lm();
  std::unique_ptr<decoder_model_holder> model_;
};

}  // namespace crucible::policies
