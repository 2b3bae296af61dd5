#pragma once
// Internal to policies/: how the decoder LM's learners run a training forward in less memory — activation
// checkpointing (a function's intermediate activations are dropped after the forward pass and recomputed in
// the backward pass) and bf16 autocast on CUDA with fp32 master weights. The two belong together: a
// recomputation must run under the autocast state of the forward it repeats. Includes LibTorch: include only
// from .cpp files.
#include <functional>

#include <torch/torch.h>

namespace crucible::policies {

/// Runs `fn(x)` keeping only `x` for the backward pass (the forward runs without building a graph). The
/// backward pass runs `fn` again with grad enabled, under the CUDA autocast state the forward saw, and
/// backpropagates through it: the gradients of the parameters `fn` reads accumulate into their .grad (a
/// nested backward, as PyTorch's reentrant checkpoint does), and x's gradient flows on. Values and gradients
/// are those of `fn(x)` itself.
///
/// Contract: `fn` is deterministic (no dropout) and what it reads does not change between the forward and
/// the backward (no optimizer step in between). Use Tensor::backward / torch::autograd::backward on a graph
/// holding a checkpoint, not torch::autograd::grad (whose inputs would miss the nested backward's gradients).
torch::Tensor checkpointed(std::function<torch::Tensor(const torch::Tensor&)> fn, const torch::Tensor& x);

/// While alive, CUDA operations of this thread run under autocast to `dtype` when `enabled` (autocast's
/// lists: matrix products in bf16, reductions in fp32; parameters stay fp32 — the master weights AdamW
/// updates), and without autocast when not. The previous state comes back at destruction, and autocast's
/// cache of cast weights is cleared when the outermost enabled guard of the thread ends, so a cast made
/// before an optimizer step is never reused after it. CPU operations are never affected. Call backward()
/// outside an enabled guard (as with torch.autocast). Thread contract: per thread, scoped.
class cuda_autocast_guard {
 public:
  explicit cuda_autocast_guard(bool enabled, at::ScalarType dtype = at::kBFloat16);
  ~cuda_autocast_guard();
  cuda_autocast_guard(const cuda_autocast_guard&) = delete;
  cuda_autocast_guard& operator=(const cuda_autocast_guard&) = delete;

  /// This thread's CUDA autocast state now.
  static bool enabled_now();
  static at::ScalarType dtype_now();

 private:
  bool enabled_;
  bool prev_enabled_;
  at::ScalarType prev_dtype_;
};

}  // namespace crucible::policies
