#pragma once
// Internal to policies/: the program policy's network, a small decoder-only causal transformer built from
// basic modules (Linear, Embedding, LayerNorm and a hand-written masked multi-head attention), so it builds
// against LibTorch 1.13 and 2.x alike (DESIGN.md §8: no batch_first/norm_first, no
// scaled_dot_product_attention). Pre-LN blocks, learned positional embeddings, a separate output head.
// This header includes LibTorch: include it only from .cpp files of this folder.
#include <cstdint>
#include <vector>

#include <torch/torch.h>

namespace crucible::policies {

struct transformer_shape {
  int64_t vocab = 0;
  int64_t d_model = 64;
  int64_t layers = 2;
  int64_t heads = 4;
  int64_t max_positions = 384;  ///< positions past the end reuse the last embedding (never an error)
};

/// Keys and values of the positions seen so far, per layer: [B, heads, length, head_dim]. Lets sampling
/// feed one or two new tokens per decision instead of the whole sequence.
struct kv_cache {
  std::vector<torch::Tensor> k, v;
  int64_t length = 0;
  /// Repeats a batch-1 cache `n` times along the batch (prompt prefilled once, then n samples).
  void expand_batch(int64_t n);
};

struct causal_attention_impl : torch::nn::Module {
  causal_attention_impl(int64_t d_model, int64_t heads);
  /// x: [B, T, D]. With a cache, x holds positions [cache length, cache length + T) and the cache grows.
  torch::Tensor forward(const torch::Tensor& x, torch::Tensor* k_cache, torch::Tensor* v_cache);
  int64_t heads, head_dim;
  torch::nn::Linear qkv{nullptr}, proj{nullptr};
};
TORCH_MODULE_IMPL(causal_attention, causal_attention_impl);

struct transformer_block_impl : torch::nn::Module {
  transformer_block_impl(int64_t d_model, int64_t heads);
  torch::Tensor forward(const torch::Tensor& x, torch::Tensor* k_cache, torch::Tensor* v_cache);
  torch::nn::LayerNorm ln1{nullptr}, ln2{nullptr};
  causal_attention attn{nullptr};
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE_IMPL(transformer_block, transformer_block_impl);

/// Thread contract: a module; one thread at a time (forward under NoGradGuard may be shared read-only).
struct causal_transformer_impl : torch::nn::Module {
  explicit causal_transformer_impl(const transformer_shape& shape);

  /// Final-layer hidden states [B, T, D] of `tokens` [B, T] (int64). Without a cache the sequence starts at
  /// position 0; with one it continues the cached positions (and the cache is extended).
  torch::Tensor hidden(const torch::Tensor& tokens, kv_cache* cache = nullptr);
  /// Logits [.., vocab] of hidden states [.., D].
  torch::Tensor logits(const torch::Tensor& h) { return head->forward(h); }

  /// Deterministic initialization from `seed` (does not touch LibTorch's global generator): normal(0,
  /// 0.02) weights, residual projections scaled by 1/sqrt(2 layers), zero biases, unit LayerNorm gains.
  void init_weights(uint64_t seed);

  transformer_shape shape;
  torch::nn::Embedding tok{nullptr}, pos{nullptr};
  std::vector<transformer_block> blocks;  ///< registered as block0, block1, ...
  torch::nn::LayerNorm ln_f{nullptr};
  torch::nn::Linear head{nullptr};
};
TORCH_MODULE_IMPL(causal_transformer, causal_transformer_impl);

}  // namespace crucible::policies
