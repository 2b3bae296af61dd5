#include "policies/lm/decoder_config.hpp"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace crucible::policies {
namespace {

struct family_row {
  lm_family family;
  const char* model_type;
  const char* architecture;
};
constexpr family_row family_table[] = {
    {lm_family::qwen2, "qwen2", "Qwen2ForCausalLM"},
    {lm_family::llama, "llama", "LlamaForCausalLM"},
};

template <class T>
status read_key(const nlohmann::json& j, const char* key, bool required, T& out, const std::string& origin) {
  if (!j.contains(key) || j[key].is_null()) {
    if (required) return make_error(origin + ": " + key + " is missing");
    return {};
  }
  try {
    out = j[key].get<T>();
  } catch (const std::exception&) {
    return make_error(origin + ": " + key + " has the wrong type (" + j[key].dump() + ")");
  }
  return {};
}

}  // namespace

const char* model_type_of(lm_family f) {
  for (const auto& r : family_table)
    if (r.family == f) return r.model_type;
  return "?";
}

const char* architecture_of(lm_family f) {
  for (const auto& r : family_table)
    if (r.family == f) return r.architecture;
  return "?";
}

int64_t decoder_config::parameter_count() const {
  const int64_t q = num_attention_heads * head_dim, kv = num_key_value_heads * head_dim;
  int64_t attn = hidden_size * q + 2 * hidden_size * kv + q * hidden_size;
  if (qkv_bias) attn += q + 2 * kv;
  if (o_bias) attn += hidden_size;
  int64_t mlp = 3 * hidden_size * intermediate_size;
  if (mlp_bias) mlp += 2 * intermediate_size + hidden_size;
  const int64_t layer = attn + mlp + 2 * hidden_size;
  return vocab_size * hidden_size * (tie_word_embeddings ? 1 : 2) + num_hidden_layers * layer + hidden_size;
}

status validate_decoder_config(const decoder_config& c) {
  auto need = [](bool ok, const char* msg) { return ok ? status{} : make_error(msg); };
  for (auto st : {need(c.vocab_size > 0, "vocab_size: expected > 0"),
                  need(c.hidden_size > 0, "hidden_size: expected > 0"),
                  need(c.intermediate_size > 0, "intermediate_size: expected > 0"),
                  need(c.num_hidden_layers > 0, "num_hidden_layers: expected > 0"),
                  need(c.num_attention_heads > 0, "num_attention_heads: expected > 0"),
                  need(c.num_key_value_heads > 0 && c.num_attention_heads % c.num_key_value_heads == 0,
                       "num_key_value_heads: expected a divisor of num_attention_heads"),
                  need(c.head_dim > 0 && c.head_dim % 2 == 0, "head_dim: expected an even size > 0"),
                  need(c.rms_norm_eps > 0, "rms_norm_eps: expected > 0"),
                  need(c.rope_theta > 0, "rope_theta: expected > 0"),
                  need(c.max_position_embeddings > 0, "max_position_embeddings: expected > 0")})
    if (!st) return st;
  return {};
}

expected<decoder_config> parse_decoder_config(const std::string& text, const std::string& origin) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    return make_error(origin + ": not JSON: " + e.what());
  }
  if (!j.is_object()) return make_error(origin + ": expected a JSON object");
  decoder_config c;
  std::string model_type;
  if (auto st = read_key(j, "model_type", true, model_type, origin); !st) return st.err();
  bool known = false;
  for (const auto& r : family_table)
    if (model_type == r.model_type) c.family = r.family, known = true;
  if (!known) return make_error(origin + ": model_type '" + model_type + "' is not supported (qwen2, llama)");
  std::string act = "silu";
  if (auto st = read_key(j, "hidden_act", false, act, origin); !st) return st.err();
  if (act != "silu") return make_error(origin + ": hidden_act '" + act + "' is not supported (silu)");
  status reads[] = {
      read_key(j, "vocab_size", true, c.vocab_size, origin),
      read_key(j, "hidden_size", true, c.hidden_size, origin),
      read_key(j, "intermediate_size", true, c.intermediate_size, origin),
      read_key(j, "num_hidden_layers", true, c.num_hidden_layers, origin),
      read_key(j, "num_attention_heads", true, c.num_attention_heads, origin),
      read_key(j, "max_position_embeddings", false, c.max_position_embeddings, origin),
      read_key(j, "rms_norm_eps", false, c.rms_norm_eps, origin),
      read_key(j, "rope_theta", false, c.rope_theta, origin),
      read_key(j, "tie_word_embeddings", false, c.tie_word_embeddings, origin),
      read_key(j, "torch_dtype", false, c.torch_dtype, origin),
      read_key(j, "bos_token_id", false, c.bos_token_id, origin),
  };
  for (auto& st : reads)
    if (!st) return st.err();
  c.num_key_value_heads = c.num_attention_heads;
  if (auto st = read_key(j, "num_key_value_heads", false, c.num_key_value_heads, origin); !st)
    return st.err();
  if (c.num_attention_heads > 0) c.head_dim = c.hidden_size / c.num_attention_heads;
  if (auto st = read_key(j, "head_dim", false, c.head_dim, origin); !st) return st.err();
  if (j.contains("eos_token_id") && !j["eos_token_id"].is_null()) {
    if (j["eos_token_id"].is_array()) {
      for (const auto& e : j["eos_token_id"])
        if (e.is_number_integer()) c.eos_token_ids.push_back(e.get<int64_t>());
    } else if (j["eos_token_id"].is_number_integer()) {
      c.eos_token_ids.push_back(j["eos_token_id"].get<int64_t>());
    }
  }
  if (c.family == lm_family::qwen2) {
    c.qkv_bias = true;
    bool sliding = false;
    if (auto st = read_key(j, "use_sliding_window", false, sliding, origin); !st) return st.err();
    if (sliding)
      return make_error(origin + ": use_sliding_window: sliding-window attention is not supported");
  } else {
    bool attention_bias = false;
    if (auto st = read_key(j, "attention_bias", false, attention_bias, origin); !st) return st.err();
    if (auto st = read_key(j, "mlp_bias", false, c.mlp_bias, origin); !st) return st.err();
    c.qkv_bias = c.o_bias = attention_bias;
  }
  if (c.torch_dtype == "float32" && j.contains("dtype") && j["dtype"].is_string())
    c.torch_dtype = j["dtype"].get<std::string>();  // newer transformers write dtype instead of torch_dtype
  // Newer transformers keep the RoPE settings in one rope_parameters object (rope_theta with the scaling's
  // keys); older ones write rope_theta and rope_scaling at the top level.
  const char* rope_key =
      j.contains("rope_parameters") && !j["rope_parameters"].is_null() ? "rope_parameters" : "rope_scaling";
  if (std::string(rope_key) == "rope_parameters" && j[rope_key].is_object())
    if (auto st = read_key(j[rope_key], "rope_theta", false, c.rope_theta, origin + ": rope_parameters"); !st)
      return st.err();
  if (j.contains(rope_key) && !j[rope_key].is_null()) {
    const auto& rs = j[rope_key];
    if (!rs.is_object()) return make_error(origin + ": " + rope_key + ": expected an object or null");
    std::string type = rs.value("rope_type", rs.value("type", std::string("default")));
    if (type != "llama3" && type != "default")
      return make_error(origin + ": " + rope_key + ": rope_type '" + type + "' is not supported (llama3)");
    if (type == "llama3") {
      const std::string where = origin + ": " + rope_key;
      status rs_reads[] = {
          read_key(rs, "factor", true, c.rope_scaling.factor, where),
          read_key(rs, "low_freq_factor", true, c.rope_scaling.low_freq_factor, where),
          read_key(rs, "high_freq_factor", true, c.rope_scaling.high_freq_factor, where),
          read_key(rs, "original_max_position_embeddings", true,
                   c.rope_scaling.original_max_position_embeddings, where),
      };
      for (auto& st : rs_reads)
        if (!st) return st.err();
      if (!(c.rope_scaling.factor > 0 && c.rope_scaling.high_freq_factor > c.rope_scaling.low_freq_factor))
        return make_error(where + ": expected factor > 0 and high_freq_factor > low_freq_factor");
    }
  }
  if (auto st = validate_decoder_config(c); !st) return make_error(origin + ": " + st.message());
  return c;
}

expected<decoder_config> read_decoder_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) return make_error("cannot read '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_decoder_config(ss.str(), path);
}

std::string decoder_config_json(const decoder_config& c) {
  nlohmann::json j = {
      {"architectures", {architecture_of(c.family)}},
      {"model_type", model_type_of(c.family)},
      {"hidden_act", "silu"},
      {"vocab_size", c.vocab_size},
      {"hidden_size", c.hidden_size},
      {"intermediate_size", c.intermediate_size},
      {"num_hidden_layers", c.num_hidden_layers},
      {"num_attention_heads", c.num_attention_heads},
      {"num_key_value_heads", c.num_key_value_heads},
      {"head_dim", c.head_dim},
      {"max_position_embeddings", c.max_position_embeddings},
      {"rms_norm_eps", c.rms_norm_eps},
      {"rope_theta", c.rope_theta},
      {"tie_word_embeddings", c.tie_word_embeddings},
      {"torch_dtype", c.torch_dtype},
      {"initializer_range", 0.02},
      {"use_cache", true},
  };
  if (c.bos_token_id >= 0) j["bos_token_id"] = c.bos_token_id;
  if (c.eos_token_ids.size() == 1) j["eos_token_id"] = c.eos_token_ids.front();
  if (c.eos_token_ids.size() > 1) j["eos_token_id"] = c.eos_token_ids;
  if (c.family == lm_family::llama) {
    j["attention_bias"] = c.qkv_bias;
    j["mlp_bias"] = c.mlp_bias;
  } else {
    j["use_sliding_window"] = false;
  }
  if (c.rope_scaling.factor > 0)
    j["rope_scaling"] = {
        {"rope_type", "llama3"},
        {"factor", c.rope_scaling.factor},
        {"low_freq_factor", c.rope_scaling.low_freq_factor},
        {"high_freq_factor", c.rope_scaling.high_freq_factor},
        {"original_max_position_embeddings", c.rope_scaling.original_max_position_embeddings}};
  else
    j["rope_scaling"] = nullptr;
  return j.dump(2) + "\n";
}

}  // namespace crucible::policies
