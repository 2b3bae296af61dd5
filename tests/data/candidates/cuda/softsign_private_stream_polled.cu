// A correct k1_softsign candidate that runs its kernel on a stream of its own, polls on the host (up to
// 20 ms) for that kernel to finish, then joins ctx->stream to it. The kernel takes about 0.1 ms; the poll
// runs out only when nothing launched during the call may start before the call returns, which is what
// the launch gate promises (it fills every SM while the host is inside a timed call).
#include <cuda_runtime.h>

#include <chrono>

#include "crucible_abi.h"

__global__ void softsign(const float* __restrict__ x, float* __restrict__ y, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    y[i] = x[i] / (1.0f + fabsf(x[i]));
}

extern "C" int crucible_forward(const cru_context* ctx, const cru_tensor* inputs, int32_t n_inputs,
                                cru_tensor* outputs, int32_t n_outputs) {
  if (n_inputs != 1 || n_outputs != 1 || inputs[0].dtype != CRU_FLOAT32) return 1;
  static cudaStream_t own = nullptr;
  static cudaEvent_t done = nullptr;
  if (!own && (cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking) != cudaSuccess ||
               cudaEventCreateWithFlags(&done, cudaEventDisableTiming) != cudaSuccess))
    return 2;
  long long n = 1;
  for (int d = 0; d < inputs[0].ndim; ++d) n *= inputs[0].shape[d];
  softsign<<<132 * 8, 256, 0, own>>>((const float*)inputs[0].data, (float*)outputs[0].data, n);
  cudaEventRecord(done, own);
  const auto t0 = std::chrono::steady_clock::now();
  while (cudaEventQuery(done) == cudaErrorNotReady &&
         std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(20)) {
  }
  cudaStreamWaitEvent((cudaStream_t)ctx->stream, done, 0);
  return cudaGetLastError() == cudaSuccess ? 0 : 5;
}
