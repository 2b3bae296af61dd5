// The comparison of a float32 output with its reference in one pass on the device (the kernel of
// output_compare_kernel.cu, built to PTX with the worker): the figures of output_comparison and a digest of
// each side from one read of both, and one wait. The ATen ops it replaces cost 1-7 ms per check on large
// outputs, several times per evaluation.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <optional>
#include <string>

#include "kernels/reference/output_check.hpp"

namespace crucible::kernels {

class device_comparer {
 public:
  /// For the current device, whose context must be current on this thread.
  device_comparer();
  ~device_comparer();
  device_comparer(const device_comparer&) = delete;
  device_comparer& operator=(const device_comparer&) = delete;

  /// Empty when the kernel loaded; otherwise why not (callers compare with ATen ops instead).
  const std::string& error() const { return error_; }

  struct result {
    output_comparison cmp;
    uint64_t got_digest = 0, want_digest = 0;  ///< equal words give equal digests
  };

  /// `n` float32 elements at `got` and `want` (device memory, contiguous), compared as output_check does
  /// (isclose with the tolerances and equal NaNs, elements holding `poison` counted); ordered on `stream`,
  /// which it waits for. Nothing when the kernel is not loaded or the launch failed.
  std::optional<result> compare_f32(const void* got, const void* want, int64_t n, double rtol, double atol,
                                    uint32_t poison, cudaStream_t stream);

 private:
  std::string error_;
  CUmodule module_ = nullptr;
  CUfunction fn_ = nullptr;
  unsigned long long* sums_device_ = nullptr;  ///< the kernel's 12 results
  unsigned long long* sums_host_ = nullptr;    ///< pinned, copied back after it
  int blocks_ = 0;
};

}  // namespace crucible::kernels
