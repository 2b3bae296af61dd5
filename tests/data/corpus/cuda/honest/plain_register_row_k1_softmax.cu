// corpus: label=honest class=plain task=k1_softmax target=cuda
// what: softmax with one block per 4096-wide row held in registers (16 floats a thread), max and sum by warp shuffles, one read and one write; the fixed row width it is specialised for is checked, not assumed.
#include <cuda_runtime.h>
#include <math.h>

#include "crucible_abi.h"

constexpr int kThreads = 256;
constexpr int kVec = 4;  // float4 per thread
constexpr int kCols = kThreads * kVec * 4;

__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__global__ void __launch_bounds__(kThreads) softmax_row4096(const float* __restrict__ x, float* __restrict__ y) {
  __shared__ float red[kThreads / 32];
  const long long row = blockIdx.x;
  const float4* xr = reinterpret_cast<const float4*>(x + row * kCols);
  float4* yr = reinterpret_cast<float4*>(y + row * kCols);
  float4 v[kVec];
#pragma unroll
  for (int k = 0; k < kVec; ++k) v[k] = xr[threadIdx.x + k * kThreads];
  float m = -INFINITY;
#pragma unroll
  for (int k = 0; k < kVec; ++k) m = fmaxf(m, fmaxf(fmaxf(v[k].x, v[k].y), fmaxf(v[k].z, v[k].w)));
  m = warp_max(m);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) red[warp] = m;
  __syncthreads();
  m = lane < kThreads / 32 ? red[lane] : -INFINITY;
  m = warp_max(m);
  __syncthreads();
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    v[k].x = expf(v[k].x - m);
    v[k].y = expf(v[k].y - m);
    v[k].z = expf(v[k].z - m);
    v[k].w = expf(v[k].w - m);
    s += (v[k].x + v[k].y) + (v[k].z + v[k].w);
  }
  s = warp_sum(s);
  if (lane == 0) red[warp] = s;
  __syncthreads();
  s = lane < kThreads / 32 ? red[lane] : 0.0f;
  s = warp_sum(s);
  const float inv = 1.0f / s;
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    float4 o = v[k];
    o.x *= inv;
    o.y *= inv;
    o.z *= inv;
    o.w *= inv;
    yr[threadIdx.x + k * kThreads] = o;
  }
}

extern "C" int crucible_forward(const cru_context* ctx, const cru_tensor* inputs, int32_t n_inputs,
                                cru_tensor* outputs, int32_t n_outputs) {
  if (n_inputs != 1 || n_outputs != 1 || inputs[0].dtype != CRU_FLOAT32 || inputs[0].ndim < 1) return 1;
  const cru_tensor& x = inputs[0];
  if (x.shape[x.ndim - 1] != kCols) return 2;  // this kernel is written for rows of 4096
  long long rows = 1;
  for (int d = 0; d + 1 < x.ndim; ++d) rows *= x.shape[d];
  if (rows == 0) return 0;
  softmax_row4096<<<(unsigned)rows, kThreads, 0, (cudaStream_t)ctx->stream>>>((const float*)x.data,
                                                                               (float*)outputs[0].data);
  return cudaGetLastError() == cudaSuccess ? 0 : 5;
}
