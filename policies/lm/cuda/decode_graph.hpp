#pragma once
// The decoder LM's decoding step captured once as a CUDA graph (built with CRUCIBLE_CUDA). At small batches
// a step of a small model is a few hundred kernels, each cheaper than its launch from the host; one graph
// replay launches them all. A graph fixes its shapes: `batch` rows and key/value caches of `capacity`
// positions, preallocated, and the position a step writes is read from the device. Includes LibTorch:
// include only from .cpp files.
#include <cstdint>
#include <memory>
#include <vector>

#include <torch/torch.h>

#include "messages/expected.hpp"
#include "policies/lm/decoder_model.hpp"

namespace at::cuda {
struct CUDAGraph;
}

namespace crucible::policies {

/// Thread contract: one thread at a time, the one that samples from `model`.
class decode_graph {
 public:
  /// Captures a step of `model` (on a CUDA device) for `batch` rows and `capacity` positions. An error when
  /// the model is not on a CUDA device or the capture fails (the caller then decodes eagerly).
  static expected<std::unique_ptr<decode_graph>> capture(decoder_model& model, int64_t batch,
                                                         int64_t capacity);
  ~decode_graph();

  /// Whether the graph still reads `model`'s weights: a place() or a reloaded module moves them, which
  /// makes the graph stale (weights copied in place, as a published update is, keep it valid).
  bool captured_from(decoder_model& model) const;
  int64_t batch() const { return batch_; }
  int64_t capacity() const { return capacity_; }

  /// Starts a sequence: copies `cache` (1 row, repeated, or `batch` rows; cache.length < capacity positions)
  /// into the graph's caches and clears the positions after it.
  void load(const lm_cache& cache);
  /// Logits [batch, vocab] after `ids` [batch] (int64, on the device) at `position` (< capacity). The
  /// tensor is the graph's output: read it before the next step.
  torch::Tensor step(const torch::Tensor& ids, int64_t position);

 private:
  decode_graph() = default;
  std::unique_ptr<at::cuda::CUDAGraph> graph_;
  std::vector<const void*> weights_;  ///< the data pointers captured
  std::vector<torch::Tensor> k_, v_;  ///< per layer [batch, kv_heads, capacity, head_dim]
  torch::Tensor ids_, position_, logits_;
  int64_t batch_ = 0, capacity_ = 0;
};

}  // namespace crucible::policies
