// corpus: label=honest class=static_handle task=k1_cumsum target=cuda
// what: row cumsum as reduce-then-scan over 1024-wide tiles: tile totals go to a static device buffer allocated once for rows x tiles, the second kernel adds the preceding tiles' totals as its carry.
#include <cuda_runtime.h>

#include "crucible_abi.h"

constexpr int kTile = 1024;
constexpr int kThreads = 256;  // 4 elements per thread

__global__ void __launch_bounds__(kThreads) tile_totals(const float* __restrict__ x, int cols, int tiles,
                                                        float* __restrict__ tot) {
  __shared__ float red[kThreads / 32];
  const long long row = blockIdx.x / tiles;
  const int tile = blockIdx.x % tiles;
  const float* xt = x + row * cols + (long long)tile * kTile;
  const int len = min(kTile, cols - tile * kTile);
  float s = 0.0f;
  for (int c = threadIdx.x; c < len; c += kThreads) s += xt[c];
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    float t = 0.0f;
    for (int k = 0; k < kThreads / 32; ++k) t += red[k];
    tot[blockIdx.x] = t;
  }
}

__global__ void __launch_bounds__(kThreads) tile_scan(const float* __restrict__ x, int cols, int tiles,
                                                      const float* __restrict__ tot, float* __restrict__ y) {
  __shared__ float warp_tot[kThreads / 32];
  const long long row = blockIdx.x / tiles;
  const int tile = blockIdx.x % tiles;
  const long long off = row * cols + (long long)tile * kTile;
  const int len = min(kTile, cols - tile * kTile);
  float carry = 0.0f;
  for (int k = 0; k < tile; ++k) carry += tot[row * tiles + k];
  const int c = threadIdx.x * 4;
  float a[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) a[k] = c + k < len ? x[off + c + k] : 0.0f;
  a[1] += a[0];
  a[2] += a[1];
  a[3] += a[2];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  float incl = a[3];
  for (int o = 1; o < 32; o <<= 1) {
    float t = __shfl_up_sync(0xffffffffu, incl, o);
    if (lane >= o) incl += t;
  }
  if (lane == 31) warp_tot[warp] = incl;
  __syncthreads();
  float before = carry + (incl - a[3]);
  for (int k = 0; k < warp; ++k) before += warp_tot[k];
#pragma unroll
  for (int k = 0; k < 4; ++k)
    if (c + k < len) y[off + c + k] = before + a[k];
}

extern "C" int crucible_forward(const cru_context* ctx, const cru_tensor* inputs, int32_t n_inputs,
                                cru_tensor* outputs, int32_t n_outputs) {
  if (n_inputs != 1 || n_outputs != 1 || inputs[0].dtype != CRU_FLOAT32 || inputs[0].ndim < 1) return 1;
  const cru_tensor& x = inputs[0];
  const int cols = (int)x.shape[x.ndim - 1];
  long long rows = 1;
  for (int d = 0; d + 1 < x.ndim; ++d) rows *= x.shape[d];
  if (rows == 0 || cols == 0) return 0;
  const int tiles = (cols + kTile - 1) / kTile;
  static float* totals = nullptr;
  static long long cap = 0;
  const long long need = rows * tiles;
  if (need > cap) {
    if (totals) cudaFree(totals);
    totals = nullptr;
    cap = 0;
    if (cudaMalloc(&totals, need * sizeof(float)) != cudaSuccess) return 3;
    cap = need;
  }
  cudaStream_t s = (cudaStream_t)ctx->stream;
  tile_totals<<<(unsigned)need, kThreads, 0, s>>>((const float*)x.data, cols, tiles, totals);
  tile_scan<<<(unsigned)need, kThreads, 0, s>>>((const float*)x.data, cols, tiles, totals, (float*)outputs[0].data);
  return cudaGetLastError() == cudaSuccess ? 0 : 5;
}
