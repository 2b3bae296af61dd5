#include "policies/lm/decoder_model.hpp"

#include <cmath>
#include <limits>
#include <random>

#include "policies/causal_attention_cache.hpp"
#include "policies/lm/activation_checkpoint.hpp"

namespace crucible::policies {
namespace {

torch::nn::Linear linear(int64_t in, int64_t out, bool bias) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias));
}

torch::Tensor rotate_half(const torch::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

// Llama 3's frequency-dependent scaling of the rotary frequencies (transformers' _compute_llama3_parameters).
torch::Tensor llama3_scaled(const torch::Tensor& inv_freq, const rope_scaling_config& s) {
  const double low_wavelen = static_cast<double>(s.original_max_position_embeddings) / s.low_freq_factor;
  const double high_wavelen = static_cast<double>(s.original_max_position_embeddings) / s.high_freq_factor;
  auto wavelen = 2 * M_PI / inv_freq;
  auto scaled = torch::where(wavelen > low_wavelen, inv_freq / s.factor, inv_freq);
  auto smooth = (static_cast<double>(s.original_max_position_embeddings) / wavelen - s.low_freq_factor) /
                (s.high_freq_factor - s.low_freq_factor);
  auto smoothed = (1 - smooth) * scaled / s.factor + smooth * scaled;
  auto medium =
      torch::logical_not(wavelen < high_wavelen).logical_and(torch::logical_not(wavelen > low_wavelen));
  return torch::where(medium, smoothed, scaled);
}

}  // namespace

rms_norm_impl::rms_norm_impl(int64_t size, double eps_) : eps(eps_) {
  weight = register_parameter("weight", torch::ones({size}));
}

torch::Tensor rms_norm_impl::forward(const torch::Tensor& x) {
  // In fp32 whatever the weights' dtype, then back, as the reference implementation does.
  auto h = x.to(torch::kFloat);
  h = h * torch::rsqrt(h.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return weight * h.to(x.scalar_type());
}

lm_attention_impl::lm_attention_impl(const decoder_config& c)
    : heads(c.num_attention_heads), kv_heads(c.num_key_value_heads), head_dim(c.head_dim) {
  q_proj = register_module("q_proj", linear(c.hidden_size, heads * head_dim, c.qkv_bias));
  k_proj = register_module("k_proj", linear(c.hidden_size, kv_heads * head_dim, c.qkv_bias));
  v_proj = register_module("v_proj", linear(c.hidden_size, kv_heads * head_dim, c.qkv_bias));
  o_proj = register_module("o_proj", linear(heads * head_dim, c.hidden_size, c.o_bias));
}

namespace {

// q [B, heads, T, D] against keys and values [B, kv_heads, S, D]; `mask` sets the scores of unseen keys.
template <typename Mask>
torch::Tensor attend(lm_attention_impl& a, const torch::Tensor& q, torch::Tensor k, torch::Tensor v,
                     Mask mask) {
  const int64_t b = q.size(0), t = q.size(2), total = k.size(2);
  if (a.kv_heads != a.heads) {
    // Grouped-query attention: each key/value head serves heads / kv_heads query heads.
    const int64_t rep = a.heads / a.kv_heads;
    k = k.unsqueeze(2)
            .expand({b, a.kv_heads, rep, total, a.head_dim})
            .reshape({b, a.heads, total, a.head_dim});
    v = v.unsqueeze(2)
            .expand({b, a.kv_heads, rep, total, a.head_dim})
            .reshape({b, a.heads, total, a.head_dim});
  }
  auto scores = torch::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(a.head_dim)));
  scores = mask(scores);
  auto att = torch::softmax(scores.to(torch::kFloat), -1).to(q.scalar_type());
  auto y = torch::matmul(att, v).transpose(1, 2).reshape({b, t, a.heads * a.head_dim});
  return a.o_proj->forward(y);
}

// q, k, v of x [B, T, H] as [B, heads or kv_heads, T, D], rotated.
std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> project(lm_attention_impl& a, const torch::Tensor& x,
                                                                const torch::Tensor& cos,
                                                                const torch::Tensor& sin) {
  const int64_t b = x.size(0), t = x.size(1);
  auto q = a.q_proj->forward(x).view({b, t, a.heads, a.head_dim}).transpose(1, 2);
  auto k = a.k_proj->forward(x).view({b, t, a.kv_heads, a.head_dim}).transpose(1, 2);
  auto v = a.v_proj->forward(x).view({b, t, a.kv_heads, a.head_dim}).transpose(1, 2);
  auto c = cos.to(q.scalar_type()), s = sin.to(q.scalar_type());
  q = q * c + rotate_half(q) * s;
  k = k * c + rotate_half(k) * s;
  return {q, k, v};
}

}  // namespace

torch::Tensor lm_attention_impl::forward(const torch::Tensor& x, const torch::Tensor& cos,
                                         const torch::Tensor& sin, torch::Tensor* k_cache,
                                         torch::Tensor* v_cache) {
  auto [q, k, v] = project(*this, x, cos, sin);
  const int64_t past = extend_kv_cache(k, v, k_cache, v_cache);
  const int64_t t = x.size(1);
  return attend(*this, q, k, v, [&](const torch::Tensor& s) { return mask_future_keys(s, t, past); });
}

torch::Tensor lm_attention_impl::forward_step(const torch::Tensor& x, const torch::Tensor& cos,
                                              const torch::Tensor& sin, const torch::Tensor& position,
                                              const torch::Tensor& key_after, torch::Tensor& k_buf,
                                              torch::Tensor& v_buf) {
  auto [q, k, v] = project(*this, x, cos, sin);
  k_buf.index_copy_(2, position, k);
  v_buf.index_copy_(2, position, v);
  return attend(*this, q, k_buf, v_buf, [&](const torch::Tensor& s) {
    return s.masked_fill(key_after, -std::numeric_limits<float>::infinity());
  });
}

lm_mlp_impl::lm_mlp_impl(const decoder_config& c) {
  gate_proj = register_module("gate_proj", linear(c.hidden_size, c.intermediate_size, c.mlp_bias));
  up_proj = register_module("up_proj", linear(c.hidden_size, c.intermediate_size, c.mlp_bias));
  down_proj = register_module("down_proj", linear(c.intermediate_size, c.hidden_size, c.mlp_bias));
}

torch::Tensor lm_mlp_impl::forward(const torch::Tensor& x) {
  return down_proj->forward(torch::silu(gate_proj->forward(x)) * up_proj->forward(x));
}

lm_layer_impl::lm_layer_impl(const decoder_config& c) {
  input_layernorm = register_module("input_layernorm", rms_norm(c.hidden_size, c.rms_norm_eps));
  self_attn = register_module("self_attn", lm_attention(c));
  post_attention_layernorm =
      register_module("post_attention_layernorm", rms_norm(c.hidden_size, c.rms_norm_eps));
  mlp = register_module("mlp", lm_mlp(c));
}

torch::Tensor lm_layer_impl::forward(const torch::Tensor& x, const torch::Tensor& cos,
                                     const torch::Tensor& sin, torch::Tensor* k_cache,
                                     torch::Tensor* v_cache) {
  auto h = x + self_attn->forward(input_layernorm->forward(x), cos, sin, k_cache, v_cache);
  return h + mlp->forward(post_attention_layernorm->forward(h));
}

torch::Tensor lm_layer_impl::forward_step(const torch::Tensor& x, const torch::Tensor& cos,
                                          const torch::Tensor& sin, const torch::Tensor& position,
                                          const torch::Tensor& key_after, torch::Tensor& k_buf,
                                          torch::Tensor& v_buf) {
  auto h =
      x + self_attn->forward_step(input_layernorm->forward(x), cos, sin, position, key_after, k_buf, v_buf);
  return h + mlp->forward(post_attention_layernorm->forward(h));
}

lm_trunk_impl::lm_trunk_impl(const decoder_config& c) {
  embed_tokens = register_module("embed_tokens", torch::nn::Embedding(c.vocab_size, c.hidden_size));
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) layers->push_back(lm_layer(c));
  norm = register_module("norm", rms_norm(c.hidden_size, c.rms_norm_eps));
}

decoder_model_impl::decoder_model_impl(const decoder_config& c) : config(c) {
  auto exponent =
      torch::arange(0, c.head_dim, 2, torch::kLong).to(torch::kFloat) / static_cast<double>(c.head_dim);
  inv_freq = 1.0 / torch::pow(c.rope_theta, exponent);
  if (c.rope_scaling.factor > 0) inv_freq = llama3_scaled(inv_freq, c.rope_scaling);
  model = register_module("model", lm_trunk(c));
  if (!c.tie_word_embeddings)
    lm_head = register_module("lm_head", linear(c.hidden_size, c.vocab_size, false));
}

std::pair<torch::Tensor, torch::Tensor> decoder_model_impl::rotary(int64_t start, int64_t length,
                                                                   const torch::Device& device) {
  return rotary_at(
      torch::arange(start, start + length, torch::TensorOptions().dtype(torch::kFloat).device(device)));
}

std::pair<torch::Tensor, torch::Tensor> decoder_model_impl::rotary_at(const torch::Tensor& positions) {
  if (inv_freq.device() != positions.device())
    inv_freq = inv_freq.to(positions.device());  // stays fp32 whatever the weights' dtype
  auto freqs = torch::outer(positions, inv_freq);
  auto emb = torch::cat({freqs, freqs}, -1);
  return {emb.cos(), emb.sin()};
}

torch::Tensor decoder_model_impl::hidden(const torch::Tensor& ids, lm_cache* cache) {
  const int64_t start = cache ? cache->length : 0;
  auto [cos, sin] = rotary(start, ids.size(1), ids.device());
  auto h = model->embed_tokens->forward(ids);
  const size_t n = model->layers->size();
  if (cache && cache->k.size() != n) {
    cache->k.assign(n, torch::Tensor());
    cache->v.assign(n, torch::Tensor());
  }
  for (size_t i = 0; i < n; ++i)
    h = model->layers[i]->as<lm_layer_impl>()->forward(h, cos, sin, cache ? &cache->k[i] : nullptr,
                                                       cache ? &cache->v[i] : nullptr);
  if (cache) cache->length += ids.size(1);
  return model->norm->forward(h);
}

torch::Tensor decoder_model_impl::hidden_step(const torch::Tensor& ids, const torch::Tensor& position,
                                              std::vector<torch::Tensor>& k, std::vector<torch::Tensor>& v) {
  auto [cos, sin] = rotary_at(position.to(torch::kFloat));
  const int64_t capacity = k.front().size(2);
  auto key_after =
      torch::arange(capacity, torch::TensorOptions().dtype(torch::kLong).device(ids.device())) > position;
  auto h = model->embed_tokens->forward(ids);
  for (size_t i = 0; i < model->layers->size(); ++i)
    h = model->layers[i]->as<lm_layer_impl>()->forward_step(h, cos, sin, position, key_after, k[i], v[i]);
  return model->norm->forward(h);
}

torch::Tensor decoder_model_impl::hidden_checkpointed(const torch::Tensor& ids) {
  auto [cos, sin] = rotary(0, ids.size(1), ids.device());
  auto h = model->embed_tokens->forward(ids);
  for (size_t i = 0; i < model->layers->size(); ++i) {
    auto* layer = model->layers[i]->as<lm_layer_impl>();
    auto run = [layer, cos = cos, sin = sin](const torch::Tensor& x) {
      return layer->forward(x, cos, sin, nullptr, nullptr);
    };
    h = checkpointed(run, h);
  }
  return model->norm->forward(h);
}

torch::Tensor decoder_model_impl::output_weight() {
  return config.tie_word_embeddings ? model->embed_tokens->weight : lm_head->weight;
}

torch::Tensor decoder_model_impl::logits(const torch::Tensor& h) {
  return torch::matmul(h, output_weight().t());
}

std::vector<std::pair<std::string, torch::Tensor>> checkpoint_parameters(decoder_model& m) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (auto& kv : m->named_parameters(/*recurse=*/true)) out.emplace_back(kv.key(), kv.value());
  return out;
}

void decoder_model_impl::init_weights(uint64_t seed) {
  torch::NoGradGuard no_grad;
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  for (auto& kv : named_parameters(/*recurse=*/true)) {
    const std::string& name = kv.key();
    torch::Tensor& p = kv.value();
    auto ends_with = [&](const std::string& suffix) {
      return name.size() >= suffix.size() &&
             name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    if (ends_with(".bias")) {
      p.zero_();
    } else if (ends_with("norm.weight")) {
      p.fill_(1.0);
    } else {
      std::vector<float> values(static_cast<size_t>(p.numel()));
      for (auto& x : values) x = normal(rng);
      p.copy_(torch::from_blob(values.data(), p.sizes(), torch::kFloat).to(p.scalar_type()));
    }
  }
}

}  // namespace crucible::policies
