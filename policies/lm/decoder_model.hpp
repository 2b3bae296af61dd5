#pragma once
// Internal to policies/: the decoder LM's network in LibTorch — RMSNorm, rotary position embeddings
// (rope_theta, llama3 scaling), grouped-query attention with optional q/k/v(/o) biases, a SwiGLU MLP, and
// tied or separate output embeddings. Its modules carry Hugging Face's parameter names
// (model.layers.N.self_attn.q_proj.weight, ...), so a checkpoint maps onto named_parameters() one to one.
// Hand-written attention (no scaled_dot_product_attention) builds against LibTorch 1.13 and 2.x alike.
// Includes LibTorch: include only from .cpp files.
#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "policies/lm/decoder_config.hpp"

namespace crucible::policies {

/// Keys and values of the positions seen so far, per layer: [B, kv_heads, length, head_dim].
struct lm_cache {
  std::vector<torch::Tensor> k, v;
  int64_t length = 0;
};

struct rms_norm_impl : torch::nn::Module {
  rms_norm_impl(int64_t size, double eps);
  torch::Tensor forward(const torch::Tensor& x);
  torch::Tensor weight;
  double eps;
};
TORCH_MODULE_IMPL(rms_norm, rms_norm_impl);

struct lm_attention_impl : torch::nn::Module {
  explicit lm_attention_impl(const decoder_config& c);
  /// x: [B, T, H]; cos/sin: [T, head_dim]. With a cache the positions continue it and it grows.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                        torch::Tensor* k_cache, torch::Tensor* v_cache);
  /// One position per row against preallocated caches [B, kv_heads, capacity, head_dim]: this step's keys
  /// and values are written at `position` (a one-element int64 tensor), keys flagged in `key_after`
  /// ([capacity] bool) are masked. Fixed shapes, no host synchronisation: a CUDA graph can capture it.
  torch::Tensor forward_step(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                             const torch::Tensor& position, const torch::Tensor& key_after,
                             torch::Tensor& k_buf, torch::Tensor& v_buf);
  int64_t heads, kv_heads, head_dim;
  torch::nn::Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};
};
TORCH_MODULE_IMPL(lm_attention, lm_attention_impl);

struct lm_mlp_impl : torch::nn::Module {
  explicit lm_mlp_impl(const decoder_config& c);
  torch::Tensor forward(const torch::Tensor& x);
  torch::nn::Linear gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};
};
TORCH_MODULE_IMPL(lm_mlp, lm_mlp_impl);

struct lm_layer_impl : torch::nn::Module {
  explicit lm_layer_impl(const decoder_config& c);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                        torch::Tensor* k_cache, torch::Tensor* v_cache);
  torch::Tensor forward_step(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                             const torch::Tensor& position, const torch::Tensor& key_after,
                             torch::Tensor& k_buf, torch::Tensor& v_buf);
  rms_norm input_layernorm{nullptr}, post_attention_layernorm{nullptr};
  lm_attention self_attn{nullptr};
  lm_mlp mlp{nullptr};
};
TORCH_MODULE_IMPL(lm_layer, lm_layer_impl);

/// The trunk, named `model` in the checkpoint: embeddings, layers, final norm.
struct lm_trunk_impl : torch::nn::Module {
  explicit lm_trunk_impl(const decoder_config& c);
  torch::nn::Embedding embed_tokens{nullptr};
  torch::nn::ModuleList layers;
  rms_norm norm{nullptr};
};
TORCH_MODULE_IMPL(lm_trunk, lm_trunk_impl);

/// Thread contract: a module; one thread at a time.
struct decoder_model_impl : torch::nn::Module {
  explicit decoder_model_impl(const decoder_config& c);

  /// Final hidden states [B, T, H] of `ids` [B, T] (int64). Without a cache the sequence starts at position
  /// 0; with one it continues the cached positions and the cache is extended.
  torch::Tensor hidden(const torch::Tensor& ids, lm_cache* cache = nullptr);
  /// One decoding step with fixed shapes (decode_graph captures it): ids [B, 1] at `position` (a
  /// one-element int64 tensor on the model's device); k[i], v[i]: layer i's preallocated caches
  /// [B, kv_heads, capacity, head_dim], written at `position`, read up to it. Final hidden states [B, 1, H];
  /// the same values as hidden(ids, cache) with a cache of `position` positions.
  torch::Tensor hidden_step(const torch::Tensor& ids, const torch::Tensor& position,
                            std::vector<torch::Tensor>& k, std::vector<torch::Tensor>& v);
  /// hidden(ids) for training in less memory: each layer keeps only its input, and its activations are
  /// recomputed in the backward pass (activation_checkpoint.hpp). Same values and gradients; no cache.
  torch::Tensor hidden_checkpointed(const torch::Tensor& ids);
  /// Logits [.., vocab] of hidden states [.., H] (the tied embedding matrix when tie_word_embeddings).
  torch::Tensor logits(const torch::Tensor& h);
  /// The output embedding matrix [vocab, H].
  torch::Tensor output_weight();

  /// Rotary cos/sin [T, head_dim] (fp32) for positions [start, start + T), as Hugging Face computes them.
  std::pair<torch::Tensor, torch::Tensor> rotary(int64_t start, int64_t length, const torch::Device& device);
  /// The same for the positions held in `positions` (a float tensor [T] on the device).
  std::pair<torch::Tensor, torch::Tensor> rotary_at(const torch::Tensor& positions);

  /// Fresh weights from `seed` (LibTorch's global generator untouched): normal(0, 0.02), zero biases, unit
  /// norms — transformers' initialisation for these families.
  void init_weights(uint64_t seed);

  decoder_config config;
  torch::Tensor inv_freq;  ///< [head_dim / 2] fp32; not a buffer, so a change of the weights' dtype leaves it
  lm_trunk model{nullptr};
  torch::nn::Linear lm_head{nullptr};  ///< null when tie_word_embeddings
};
TORCH_MODULE_IMPL(decoder_model, decoder_model_impl);

/// The checkpoint-format name of each parameter and the parameter itself.
std::vector<std::pair<std::string, torch::Tensor>> checkpoint_parameters(decoder_model& m);

}  // namespace crucible::policies
