#include "kernels/eval_worker/cuda/output_compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace crucible::kernels {

/// The PTX of output_compare_kernel.cu, embedded by the build (kernels/CMakeLists.txt).
extern const char* const output_compare_ptx;

device_comparer::device_comparer() {
  CUdevice dev = 0;
  if (CUresult r = cuCtxGetDevice(&dev); r != CUDA_SUCCESS) {
    error_ = "no current context";
    return;
  }
  if (cuModuleLoadData(&module_, output_compare_ptx) != CUDA_SUCCESS ||
      cuModuleGetFunction(&fn_, module_, "crucible_compare_f32") != CUDA_SUCCESS) {
    error_ = "the comparison kernel did not load";
    fn_ = nullptr;
    return;
  }
  if (cudaMalloc(&sums_device_, 12 * sizeof(unsigned long long)) != cudaSuccess ||
      cudaHostAlloc(&sums_host_, 12 * sizeof(unsigned long long), cudaHostAllocDefault) != cudaSuccess) {
    cudaGetLastError();
    error_ = "no memory for the comparison's results";
    fn_ = nullptr;
    return;
  }
  int sms = 0;
  cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
  blocks_ = std::max(1, sms) * 8;  // enough resident warps to stream both sides at the device's bandwidth
}

device_comparer::~device_comparer() {
  if (sums_device_) cudaFree(sums_device_);
  if (sums_host_) cudaFreeHost(sums_host_);
  if (module_) cuModuleUnload(module_);
}

std::optional<device_comparer::result> device_comparer::compare_f32(const void* got, const void* want,
                                                                    int64_t n, double rtol, double atol,
                                                                    uint32_t poison, cudaStream_t stream) {
  if (!fn_ || n < 0) return std::nullopt;
  result res;
  res.cmp.numel = n;
  if (n == 0) {
    res.cmp.ok = true;
    return res;
  }
  constexpr unsigned threads = 256;
  const auto blocks = static_cast<unsigned>(std::min<int64_t>(blocks_, (n + threads - 1) / threads));
  auto count = static_cast<unsigned long long>(n);
  void* args[] = {
      const_cast<void**>(&got), const_cast<void**>(&want), &count, &rtol, &atol, &poison, &sums_device_};
  if (cudaMemsetAsync(sums_device_, 0, 12 * sizeof(unsigned long long), stream) != cudaSuccess ||
      cuLaunchKernel(fn_, blocks, 1, 1, threads, 1, 1, 0, reinterpret_cast<CUstream>(stream), args,
                     nullptr) != CUDA_SUCCESS ||
      cudaMemcpyAsync(sums_host_, sums_device_, 12 * sizeof(unsigned long long), cudaMemcpyDeviceToHost,
                      stream) != cudaSuccess ||
      cudaStreamSynchronize(stream) != cudaSuccess) {
    cudaGetLastError();
    return std::nullopt;
  }
  const unsigned long long* s = sums_host_;
  auto as_double = [](unsigned long long bits) {
    double d;
    std::memcpy(&d, &bits, sizeof d);
    return d;
  };
  output_comparison& c = res.cmp;
  c.mismatches = static_cast<int64_t>(s[0]);
  c.poisoned = static_cast<int64_t>(s[1]);
  if (s[2] > 0) c.first_mismatch = n - static_cast<int64_t>(s[2]);
  c.max_abs_err = s[5] ? INFINITY : as_double(s[3]);  // a non-finite where the other side is finite
  c.max_rel_err = as_double(s[4]);
  c.ok = c.mismatches == 0 && c.poisoned == 0;
  if (c.poisoned > 0 && c.mismatches < c.poisoned) c.mismatches = c.poisoned;
  // As cuda_evaluator's ATen digest combined its three sums.
  res.got_digest = s[6] * 0x9e3779b97f4a7c15ull ^ s[7] * 0xc2b2ae3d27d4eb4full ^ s[8];
  res.want_digest = s[9] * 0x9e3779b97f4a7c15ull ^ s[10] * 0xc2b2ae3d27d4eb4full ^ s[11];
  return res;
}

}  // namespace crucible::kernels
