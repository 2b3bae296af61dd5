// corpus: label=honest class=static_handle task=k1_softmax target=cuda
// what: softmax with each 4096-wide row split over four blocks: per-chunk (max, sum of exp) partials go to a static device buffer allocated once by row count, a second kernel merges the four and writes exp(x - M) / S.
#include <cuda_runtime.h>
#include <math.h>

#include "crucible_abi.h"

constexpr int kSplit = 4;
constexpr int kThreads = 256;

__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__global__ void __launch_bounds__(kThreads) chunk_stats(const float* __restrict__ x, int cols, float2* __restrict__ part) {
  __shared__ float red[kThreads / 32];
  const long long row = blockIdx.x / kSplit;
  const int chunk = blockIdx.x % kSplit;
  const int len = cols / kSplit;
  const float* xc = x + row * cols + (long long)chunk * len;
  float m = -INFINITY;
  for (int c = threadIdx.x; c < len; c += kThreads) m = fmaxf(m, xc[c]);
  m = warp_max(m);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = m;
  __syncthreads();
  m = -INFINITY;
  for (int k = 0; k < kThreads / 32; ++k) m = fmaxf(m, red[k]);
  __syncthreads();
  float s = 0.0f;
  for (int c = threadIdx.x; c < len; c += kThreads) s += expf(xc[c] - m);
  s = warp_sum(s);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    float t = 0.0f;
    for (int k = 0; k < kThreads / 32; ++k) t += red[k];
    part[blockIdx.x] = make_float2(m, t);
  }
}

__global__ void __launch_bounds__(kThreads) chunk_write(const float* __restrict__ x, int cols,
                                                        const float2* __restrict__ part, float* __restrict__ y) {
  const long long row = blockIdx.x / kSplit;
  const int chunk = blockIdx.x % kSplit;
  const int len = cols / kSplit;
  float M = -INFINITY;
#pragma unroll
  for (int k = 0; k < kSplit; ++k) M = fmaxf(M, part[row * kSplit + k].x);
  float S = 0.0f;
#pragma unroll
  for (int k = 0; k < kSplit; ++k) {
    float2 p = part[row * kSplit + k];
    S += p.y * expf(p.x - M);
  }
  const float inv = 1.0f / S;
  const long long off = row * cols + (long long)chunk * len;
  for (int c = threadIdx.x; c < len; c += kThreads) y[off + c] = expf(x[off + c] - M) * inv;
}

extern "C" int crucible_forward(const cru_context* ctx, const cru_tensor* inputs, int32_t n_inputs,
                                cru_tensor* outputs, int32_t n_outputs) {
  if (n_inputs != 1 || n_outputs != 1 || inputs[0].dtype != CRU_FLOAT32 || inputs[0].ndim < 1) return 1;
  const cru_tensor& x = inputs[0];
  const int cols = (int)x.shape[x.ndim - 1];
  if (cols % kSplit != 0) return 2;
  long long rows = 1;
  for (int d = 0; d + 1 < x.ndim; ++d) rows *= x.shape[d];
  if (rows == 0) return 0;
  static float2* part = nullptr;
  static long long cap_rows = 0;
  if (rows > cap_rows) {
    if (part) cudaFree(part);
    part = nullptr;
    cap_rows = 0;
    if (cudaMalloc(&part, rows * kSplit * sizeof(float2)) != cudaSuccess) return 3;
    cap_rows = rows;
  }
  cudaStream_t s = (cudaStream_t)ctx->stream;
  chunk_stats<<<(unsigned)(rows * kSplit), kThreads, 0, s>>>((const float*)x.data, cols, part);
  chunk_write<<<(unsigned)(rows * kSplit), kThreads, 0, s>>>((const float*)x.data, cols, part, (float*)outputs[0].data);
  return cudaGetLastError() == cudaSuccess ? 0 : 5;
}
