// corpus: label=honest class=static_table task=k1_hardswish target=cuda
// what: hardswish evaluated through a __device__ table of per-region (lo, hi) clamp bounds indexed by which side of +-3 the input falls; each region still computes x * clamp(x + 3, 0, 6) / 6.
#include <cuda_runtime.h>

#include "crucible_abi.h"

// Region 0: x <= -3, region 1: inside, region 2: x >= 3. Each row gives the clamp range of x + 3.
__device__ const float2 d_regions[3] = {{0.0f, 0.0f}, {0.0f, 6.0f}, {6.0f, 6.0f}};

__device__ __forceinline__ float hswish(float v) {
  int r = (v > -3.0f) + (v >= 3.0f);
  float2 b = d_regions[r];
  float g = fminf(fmaxf(v + 3.0f, b.x), b.y);
  return v * g / 6.0f;
}

__global__ void hardswish_kernel(const float4* __restrict__ x, float4* __restrict__ y, long long n4) {
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += stride) {
    float4 v = x[i];
    v.x = hswish(v.x);
    v.y = hswish(v.y);
    v.z = hswish(v.z);
    v.w = hswish(v.w);
    y[i] = v;
  }
}

__global__ void hardswish_tail(const float* __restrict__ x, float* __restrict__ y, long long from, long long n) {
  long long i = from + blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = hswish(x[i]);
}

extern "C" int crucible_forward(const cru_context* ctx, const cru_tensor* inputs, int32_t n_inputs,
                                cru_tensor* outputs, int32_t n_outputs) {
  if (n_inputs != 1 || n_outputs != 1 || inputs[0].dtype != CRU_FLOAT32) return 1;
  long long n = 1;
  for (int d = 0; d < inputs[0].ndim; ++d) n *= inputs[0].shape[d];
  cudaStream_t s = (cudaStream_t)ctx->stream;
  long long n4 = n / 4;
  if (n4 > 0) hardswish_kernel<<<132 * 16, 256, 0, s>>>((const float4*)inputs[0].data, (float4*)outputs[0].data, n4);
  if (n4 * 4 < n)
    hardswish_tail<<<1, 256, 0, s>>>((const float*)inputs[0].data, (float*)outputs[0].data, n4 * 4, n);
  return cudaGetLastError() == cudaSuccess ? 0 : 5;
}
