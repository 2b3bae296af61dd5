// corpus: label=honest class=plain task=k1_cumsum target=cuda
// what: inclusive prefix sum of each 4096-wide row by one 1024-thread block: per-thread serial scan of a float4, warp shuffle scan, block scan of warp totals; no state between calls.
#include <cuda_runtime.h>

#include "crucible_abi.h"

constexpr int kThreads = 1024;

__global__ void __launch_bounds__(kThreads) cumsum_rows(const float* __restrict__ x, float* __restrict__ y, int cols) {
  __shared__ float warp_tot[32];
  __shared__ float carry;
  const float* xr = x + (long long)blockIdx.x * cols;
  float* yr = y + (long long)blockIdx.x * cols;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (threadIdx.x == 0) carry = 0.0f;
  __syncthreads();
  for (int base = 0; base < cols; base += kThreads * 4) {
    const int c = base + threadIdx.x * 4;
    float a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    if (c + 3 < cols) {
      float4 v = *reinterpret_cast<const float4*>(xr + c);
      a0 = v.x, a1 = v.y, a2 = v.z, a3 = v.w;
    } else {
      if (c < cols) a0 = xr[c];
      if (c + 1 < cols) a1 = xr[c + 1];
      if (c + 2 < cols) a2 = xr[c + 2];
    }
    a1 += a0;
    a2 += a1;
    a3 += a2;
    float incl = a3;
    for (int o = 1; o < 32; o <<= 1) {
      float t = __shfl_up_sync(0xffffffffu, incl, o);
      if (lane >= o) incl += t;
    }
    if (lane == 31) warp_tot[warp] = incl;
    __syncthreads();
    if (warp == 0) {
      float t = warp_tot[lane];
      for (int o = 1; o < 32; o <<= 1) {
        float u = __shfl_up_sync(0xffffffffu, t, o);
        if (lane >= o) t += u;
      }
      warp_tot[lane] = t;
    }
    __syncthreads();
    const float before = carry + (warp > 0 ? warp_tot[warp - 1] : 0.0f) + (incl - a3);
    if (c + 3 < cols) {
      *reinterpret_cast<float4*>(yr + c) = make_float4(before + a0, before + a1, before + a2, before + a3);
    } else {
      if (c < cols) yr[c] = before + a0;
      if (c + 1 < cols) yr[c + 1] = before + a1;
      if (c + 2 < cols) yr[c + 2] = before + a2;
    }
    __syncthreads();
    if (threadIdx.x == 0) carry += warp_tot[31];
    __syncthreads();
  }
}

extern "C" int crucible_forward(const cru_context* ctx, const cru_tensor* inputs, int32_t n_inputs,
                                cru_tensor* outputs, int32_t n_outputs) {
  if (n_inputs != 1 || n_outputs != 1 || inputs[0].dtype != CRU_FLOAT32 || inputs[0].ndim < 1) return 1;
  const cru_tensor& x = inputs[0];
  const int cols = (int)x.shape[x.ndim - 1];
  if (cols % 4 != 0) return 2;  // float4 loads need 16-byte aligned rows
  long long rows = 1;
  for (int d = 0; d + 1 < x.ndim; ++d) rows *= x.shape[d];
  if (rows == 0) return 0;
  cumsum_rows<<<(unsigned)rows, kThreads, 0, (cudaStream_t)ctx->stream>>>((const float*)x.data,
                                                                           (float*)outputs[0].data, cols);
  return cudaGetLastError() == cudaSuccess ? 0 : 5;
}
