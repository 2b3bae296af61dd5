// corpus: label=honest class=plain task=k1_rms_norm target=cuda
// what: rms_norm with one block per row: sum of squares by block reduction, then x * rsqrt(mean + 1e-6) * w in the same kernel (the row is re-read from L2).
#include <cuda_runtime.h>

#include "crucible_abi.h"

constexpr int kThreads = 512;

__global__ void __launch_bounds__(kThreads) rms_norm_rows(const float* __restrict__ x, const float* __restrict__ w,
                                                          float* __restrict__ y, int cols, float eps) {
  __shared__ float red[kThreads / 32];
  const float* xr = x + (long long)blockIdx.x * cols;
  float* yr = y + (long long)blockIdx.x * cols;
  float ss = 0.0f;
  for (int c = threadIdx.x; c < cols; c += kThreads) {
    float v = xr[c];
    ss = fmaf(v, v, ss);
  }
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = ss;
  __syncthreads();
  if (threadIdx.x < 32) {
    float t = threadIdx.x < kThreads / 32 ? red[threadIdx.x] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) t += __shfl_xor_sync(0xffffffffu, t, o);
    if (threadIdx.x == 0) red[0] = t;
  }
  __syncthreads();
  const float r = rsqrtf(red[0] / (float)cols + eps);
  for (int c = threadIdx.x; c < cols; c += kThreads) yr[c] = (xr[c] * r) * w[c];
}

extern "C" int crucible_forward(const cru_context* ctx, const cru_tensor* inputs, int32_t n_inputs,
                                cru_tensor* outputs, int32_t n_outputs) {
  if (n_inputs != 2 || n_outputs != 1 || inputs[0].dtype != CRU_FLOAT32 || inputs[0].ndim < 1) return 1;
  const cru_tensor& x = inputs[0];
  const int cols = (int)x.shape[x.ndim - 1];
  long long rows = 1;
  for (int d = 0; d + 1 < x.ndim; ++d) rows *= x.shape[d];
  if (rows == 0) return 0;
  rms_norm_rows<<<(unsigned)rows, kThreads, 0, (cudaStream_t)ctx->stream>>>(
      (const float*)x.data, (const float*)inputs[1].data, (float*)outputs[0].data, cols, 1e-6f);
  return cudaGetLastError() == cudaSuccess ? 0 : 5;
}
