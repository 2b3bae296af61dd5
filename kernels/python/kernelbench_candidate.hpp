#pragma once
// A KernelBench solution (`ModelNew` in a Python file) run in this process's interpreter on a CUDA device:
// the CUDA eval worker hosts it beside the problem's Model, as it hosts a C-ABI candidate's library beside
// the chain reference (on the CPU a candidate runs in a sealed process of its own instead). It is built like
// its problem (the problem's get_init_inputs under kernelbench_model_seed) and runs one forward pass while
// loading, so imports, Triton's JIT and torch.utils.cpp_extension builds happen before the first call.
// torch's backend flags (TF32, cuDNN's benchmark and determinism, reduced-precision reductions, the float32
// matmul precision) are the candidate's own during its calls and the worker's otherwise: what it sets for
// itself never reaches the reference it is measured against.
#include <cstdint>
#include <memory>
#include <string>

#include "kernels/abi/crucible_abi.h"
#include "messages/expected.hpp"
#include "messages/task.hpp"

namespace crucible::kernels {

/// Thread contract: the thread that started Python, one call at a time.
class kernelbench_candidate {
 public:
  /// Executes `path`, builds its ModelNew on CUDA device `device` and runs the warm-up pass on the
  /// problem's inputs of seed 0. An error with Python's message naming the file; a warm-up pass that
  /// raises is not one (the first call fails the same way, and is judged as a call).
  static expected<std::unique_ptr<kernelbench_candidate>> load(const std::string& path, const task_spec& task,
                                                               int device);
  ~kernelbench_candidate();
  kernelbench_candidate(const kernelbench_candidate&) = delete;
  kernelbench_candidate& operator=(const kernelbench_candidate&) = delete;

  /// Around each call, outside its clock: the candidate's flags in, then the worker's back.
  void enter();
  void leave();
  /// The ABI's entry point: forward() on the views (device tensors over them, no copies), its result
  /// copied into *out on the current stream. Throws std::runtime_error with Python's message when forward()
  /// raises or returns a tensor of another shape or dtype.
  int call(const cru_tensor* in, int32_t n, cru_tensor* out);
  /// What the last call that failed because its output was disguised (a tensor subclass claiming a shape
  /// its storage does not hold) said, and forgets it; empty when none did since the last time asked.
  std::string take_disguise();
  /// The flags the candidate set for itself, as "torch.backends.cudnn.benchmark=True, ..." (empty: none).
  std::string own_flags() const;

  struct impl;

 private:
  explicit kernelbench_candidate(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace crucible::kernels
