// corpus: label=honest class=one_time_init task=k1_layer_norm target=cuda
// what: layer_norm with a warp per row (two-pass mean and biased variance from registers, eps 1e-5); the SM count used to size the persistent grid is queried once and kept in a static.
#include <cuda_runtime.h>

#include "crucible_abi.h"

constexpr int kWarps = 8;
constexpr int kCols = 4096;
constexpr int kPer = kCols / 32 / 4;  // float4 per lane

__global__ void __launch_bounds__(kWarps * 32) layer_norm_warp(const float* __restrict__ x, const float* __restrict__ w,
                                                               const float* __restrict__ b, float* __restrict__ y,
                                                               long long rows, float eps) {
  const int lane = threadIdx.x & 31;
  const long long first = (long long)blockIdx.x * kWarps + (threadIdx.x >> 5);
  const long long step = (long long)gridDim.x * kWarps;
  const float4* w4 = reinterpret_cast<const float4*>(w);
  const float4* b4 = reinterpret_cast<const float4*>(b);
  for (long long r = first; r < rows; r += step) {
    const float4* xr = reinterpret_cast<const float4*>(x + r * kCols);
    float4* yr = reinterpret_cast<float4*>(y + r * kCols);
    float4 v[kPer];
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      v[k] = xr[lane + 32 * k];
      s += (v[k].x + v[k].y) + (v[k].z + v[k].w);
    }
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    const float mean = s / (float)kCols;
    float q = 0.0f;
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      float dx = v[k].x - mean, dy = v[k].y - mean, dz = v[k].z - mean, dw = v[k].w - mean;
      q += (dx * dx + dy * dy) + (dz * dz + dw * dw);
    }
    for (int o = 16; o > 0; o >>= 1) q += __shfl_xor_sync(0xffffffffu, q, o);
    const float rstd = rsqrtf(q / (float)kCols + eps);
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      float4 ww = w4[lane + 32 * k], bb = b4[lane + 32 * k], o;
      o.x = (v[k].x - mean) * rstd * ww.x + bb.x;
      o.y = (v[k].y - mean) * rstd * ww.y + bb.y;
      o.z = (v[k].z - mean) * rstd * ww.z + bb.z;
      o.w = (v[k].w - mean) * rstd * ww.w + bb.w;
      yr[lane + 32 * k] = o;
    }
  }
}

static int sm_count() {
  static int sms = 0;
  if (sms == 0) {
    int dev = 0;
    cudaGetDevice(&dev);
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms <= 0) sms = 132;
  }
  return sms;
}

extern "C" int crucible_forward(const cru_context* ctx, const cru_tensor* inputs, int32_t n_inputs,
                                cru_tensor* outputs, int32_t n_outputs) {
  if (n_inputs != 3 || n_outputs != 1 || inputs[0].dtype != CRU_FLOAT32 || inputs[0].ndim < 1) return 1;
  const cru_tensor& x = inputs[0];
  if (x.shape[x.ndim - 1] != kCols) return 2;
  long long rows = 1;
  for (int d = 0; d + 1 < x.ndim; ++d) rows *= x.shape[d];
  if (rows == 0) return 0;
  long long blocks = (rows + kWarps - 1) / kWarps;
  long long cap = (long long)sm_count() * 8;
  if (blocks > cap) blocks = cap;
  layer_norm_warp<<<(unsigned)blocks, kWarps * 32, 0, (cudaStream_t)ctx->stream>>>(
      (const float*)x.data, (const float*)inputs[1].data, (const float*)inputs[2].data, (float*)outputs[0].data, rows,
      1e-5f);
  return cudaGetLastError() == cudaSuccess ? 0 : 5;
}
