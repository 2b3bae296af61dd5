// corpus: label=honest class=one_time_init task=k1_log_softmax target=cuda
// what: log_softmax that stages each 16384-wide row in 64 KiB of dynamic shared memory; a static flag raises the kernel's shared-memory limit with cudaFuncSetAttribute on the first call only.
#include <cuda_runtime.h>
#include <math.h>

#include "crucible_abi.h"

constexpr int kThreads = 1024;

__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ float block_reduce(float v, bool is_max, float* red) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = is_max ? warp_max(v) : warp_sum(v);
  if (lane == 0) red[warp] = v;
  __syncthreads();
  float t = lane < (int)(blockDim.x >> 5) ? red[lane] : (is_max ? -INFINITY : 0.0f);
  t = is_max ? warp_max(t) : warp_sum(t);
  __syncthreads();
  return t;
}

__global__ void __launch_bounds__(kThreads) log_softmax_rows(const float* __restrict__ x, float* __restrict__ y, int cols) {
  extern __shared__ float row[];
  __shared__ float red[32];
  const float* xr = x + (long long)blockIdx.x * cols;
  float* yr = y + (long long)blockIdx.x * cols;
  float m = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += kThreads) {
    float v = xr[c];
    row[c] = v;
    m = fmaxf(m, v);
  }
  m = block_reduce(m, true, red);
  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += kThreads) s += expf(row[c] - m);
  s = block_reduce(s, false, red);
  const float lse = logf(s);
  for (int c = threadIdx.x; c < cols; c += kThreads) yr[c] = (row[c] - m) - lse;
}

extern "C" int crucible_forward(const cru_context* ctx, const cru_tensor* inputs, int32_t n_inputs,
                                cru_tensor* outputs, int32_t n_outputs) {
  if (n_inputs != 1 || n_outputs != 1 || inputs[0].dtype != CRU_FLOAT32 || inputs[0].ndim < 1) return 1;
  const cru_tensor& x = inputs[0];
  const int cols = (int)x.shape[x.ndim - 1];
  const size_t smem = (size_t)cols * sizeof(float);
  static size_t configured = 0;
  if (smem > configured) {
    int dev = 0, optin = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    if (smem + 32 * sizeof(float) > (size_t)optin) return 2;
    if (cudaFuncSetAttribute(log_softmax_rows, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) != cudaSuccess)
      return 3;
    configured = smem;
  }
  long long rows = 1;
  for (int d = 0; d + 1 < x.ndim; ++d) rows *= x.shape[d];
  if (rows == 0) return 0;
  log_softmax_rows<<<(unsigned)rows, kThreads, smem, (cudaStream_t)ctx->stream>>>((const float*)x.data,
                                                                                  (float*)outputs[0].data, cols);
  return cudaGetLastError() == cudaSuccess ? 0 : 5;
}
