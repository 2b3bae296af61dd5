#include "policies/transformer.hpp"

#include <cmath>
#include <limits>
#include <random>
#include <string>

#include "policies/causal_attention_cache.hpp"

namespace crucible::policies {

void kv_cache::expand_batch(int64_t n) {
  for (auto& t : k) t = t.expand({n, -1, -1, -1}).contiguous();
  for (auto& t : v) t = t.expand({n, -1, -1, -1}).contiguous();
}

causal_attention_impl::causal_attention_impl(int64_t d_model, int64_t heads_)
    : heads(heads_), head_dim(d_model / heads_) {
  qkv = register_module("qkv", torch::nn::Linear(d_model, 3 * d_model));
  proj = register_module("proj", torch::nn::Linear(d_model, d_model));
}

torch::Tensor causal_attention_impl::forward(const torch::Tensor& x, torch::Tensor* k_cache,
                                             torch::Tensor* v_cache) {
  const int64_t b = x.size(0), t = x.size(1), d = x.size(2);
  // [B, T, 3D] -> 3 x [B, H, T, hd]
  auto parts = qkv->forward(x).view({b, t, 3, heads, head_dim}).permute({2, 0, 3, 1, 4});
  torch::Tensor q = parts[0], k = parts[1], v = parts[2];
  const int64_t past = extend_kv_cache(k, v, k_cache, v_cache);
  const int64_t total = past + t;
  // Small products (decoding a few tokens against the cache) are cheaper as broadcast-multiply-sum than as
  // a batched GEMM, which costs one BLAS call per (batch, head) pair; training shapes use the GEMM.
  const bool small = b * heads * t * total * head_dim <= (int64_t{1} << 20);
  auto scores = small ? (q.unsqueeze(3) * k.unsqueeze(2)).sum(-1) : torch::matmul(q, k.transpose(-2, -1));
  scores = scores * (1.0 / std::sqrt(static_cast<double>(head_dim)));
  scores = mask_future_keys(scores, t, past);
  auto att = torch::softmax(scores, -1);
  auto y = small ? (att.unsqueeze(-1) * v.unsqueeze(2)).sum(3) : torch::matmul(att, v);
  y = y.transpose(1, 2).reshape({b, t, d});
  return proj->forward(y);
}

transformer_block_impl::transformer_block_impl(int64_t d_model, int64_t heads) {
  ln1 = register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model})));
  attn = register_module("attn", causal_attention(d_model, heads));
  ln2 = register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model})));
  fc1 = register_module("fc1", torch::nn::Linear(d_model, 4 * d_model));
  fc2 = register_module("fc2", torch::nn::Linear(4 * d_model, d_model));
}

torch::Tensor transformer_block_impl::forward(const torch::Tensor& x, torch::Tensor* k_cache,
                                              torch::Tensor* v_cache) {
  auto h = x + attn->forward(ln1->forward(x), k_cache, v_cache);
  return h + fc2->forward(torch::gelu(fc1->forward(ln2->forward(h))));
}

causal_transformer_impl::causal_transformer_impl(const transformer_shape& s) : shape(s) {
  tok = register_module("tok", torch::nn::Embedding(s.vocab, s.d_model));
  pos = register_module("pos", torch::nn::Embedding(s.max_positions, s.d_model));
  for (int64_t i = 0; i < s.layers; ++i)
    blocks.push_back(register_module("block" + std::to_string(i), transformer_block(s.d_model, s.heads)));
  ln_f = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({s.d_model})));
  head = register_module("head", torch::nn::Linear(torch::nn::LinearOptions(s.d_model, s.vocab).bias(false)));
}

torch::Tensor causal_transformer_impl::hidden(const torch::Tensor& tokens, kv_cache* cache) {
  const int64_t t = tokens.size(1);
  const int64_t start = cache ? cache->length : 0;
  auto positions = torch::arange(start, start + t, torch::TensorOptions().dtype(torch::kLong))
                       .clamp_max(shape.max_positions - 1)
                       .to(tokens.device());
  auto x = tok->forward(tokens) + pos->forward(positions).unsqueeze(0);
  if (cache && cache->k.empty()) {
    cache->k.resize(blocks.size());
    cache->v.resize(blocks.size());
  }
  for (size_t i = 0; i < blocks.size(); ++i)
    x = blocks[i]->forward(x, cache ? &cache->k[i] : nullptr, cache ? &cache->v[i] : nullptr);
  if (cache) cache->length += t;
  return ln_f->forward(x);
}

void causal_transformer_impl::init_weights(uint64_t seed) {
  torch::NoGradGuard no_grad;
  std::mt19937_64 rng(seed);
  const float residual_std = 0.02f / std::sqrt(2.0f * static_cast<float>(std::max<int64_t>(shape.layers, 1)));
  for (auto& kv : named_parameters(/*recurse=*/true)) {
    const std::string& name = kv.key();
    torch::Tensor& p = kv.value();
    auto ends_with = [&](const std::string& suffix) {
      return name.size() >= suffix.size() &&
             name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    const bool layer_norm = name.find("ln") != std::string::npos;
    if (ends_with("bias")) {
      p.zero_();
    } else if (layer_norm) {
      p.fill_(1.0);
    } else {
      float sd = (ends_with("proj.weight") || ends_with("fc2.weight")) ? residual_std : 0.02f;
      std::normal_distribution<float> normal(0.0f, sd);
      std::vector<float> values(static_cast<size_t>(p.numel()));
      for (auto& x : values) x = normal(rng);
      p.copy_(torch::from_blob(values.data(), p.sizes(), torch::kFloat));
    }
  }
}

}  // namespace crucible::policies
