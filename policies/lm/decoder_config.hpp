#pragma once
// A decoder-only language model's shape, as Hugging Face's config.json says it, for the families Crucible
// runs: Qwen2 / Qwen2.5(-Coder) (q/k/v biases) and Llama 3 (optional attention and MLP biases, llama3 RoPE
// scaling). Parsed and written without LibTorch; errors name the key.
#include <cstdint>
#include <string>
#include <vector>

#include "messages/expected.hpp"

namespace crucible::policies {

enum class lm_family { qwen2, llama };

/// Llama 3's RoPE scaling (rope_scaling.rope_type: llama3); factor 0 means none.
struct rope_scaling_config {
  double factor = 0.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 8192;
};

struct decoder_config {
  lm_family family = lm_family::qwen2;
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;  ///< grouped-query attention: heads share key/value heads
  int64_t head_dim = 0;             ///< hidden_size / num_attention_heads unless config.json says
  int64_t max_position_embeddings = 32768;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  rope_scaling_config rope_scaling;
  bool tie_word_embeddings = false;
  bool qkv_bias = false;                ///< Qwen2: always; Llama: attention_bias
  bool o_bias = false;                  ///< Llama: attention_bias
  bool mlp_bias = false;                ///< Llama: mlp_bias
  std::string torch_dtype = "float32";  ///< the checkpoint's dtype as config.json names it
  int64_t bos_token_id = -1;
  std::vector<int64_t> eos_token_ids;

  int64_t parameter_count() const;
};

/// The family's name in config.json (model_type) and its architecture class: one table.
const char* model_type_of(lm_family f);
const char* architecture_of(lm_family f);

/// Parses config.json text; `origin` prefixes errors. Unsupported features (another model_type, an
/// activation other than silu, a RoPE scaling other than llama3, sliding-window attention) are errors.
expected<decoder_config> parse_decoder_config(const std::string& json_text, const std::string& origin);
expected<decoder_config> read_decoder_config(const std::string& path);

/// config.json for `c` (what transformers' from_pretrained reads back).
std::string decoder_config_json(const decoder_config& c);

/// Checks sizes (positive, heads dividing the hidden size, key/value heads dividing the heads).
status validate_decoder_config(const decoder_config& c);

}  // namespace crucible::policies
