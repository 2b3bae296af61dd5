// corpus: label=honest class=plain task=k1_elu target=cuda
// what: elu (alpha 1) in one vectorised grid-stride pass with expm1f on the negative side; the 4-wide loads and a separate tail kernel are the only tricks.
#include <cuda_runtime.h>

#include "crucible_abi.h"

__device__ __forceinline__ float elu1(float v) { return v > 0.0f ? v : expm1f(v); }

__global__ void elu_vec4(const float4* __restrict__ x, float4* __restrict__ y, long long n4) {
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += stride) {
    float4 v = x[i];
    v.x = elu1(v.x);
    v.y = elu1(v.y);
    v.z = elu1(v.z);
    v.w = elu1(v.w);
    y[i] = v;
  }
}

__global__ void elu_tail(const float* __restrict__ x, float* __restrict__ y, long long from, long long n) {
  long long i = from + blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = elu1(x[i]);
}

extern "C" int crucible_forward(const cru_context* ctx, const cru_tensor* inputs, int32_t n_inputs,
                                cru_tensor* outputs, int32_t n_outputs) {
  if (n_inputs != 1 || n_outputs != 1 || inputs[0].dtype != CRU_FLOAT32) return 1;
  long long n = 1;
  for (int d = 0; d < inputs[0].ndim; ++d) n *= inputs[0].shape[d];
  cudaStream_t s = (cudaStream_t)ctx->stream;
  const float* x = (const float*)inputs[0].data;
  float* y = (float*)outputs[0].data;
  long long n4 = n / 4;
  if (n4 > 0) {
    long long blocks = (n4 + 255) / 256;
    if (blocks > 132 * 16) blocks = 132 * 16;
    elu_vec4<<<(unsigned)blocks, 256, 0, s>>>((const float4*)x, (float4*)y, n4);
  }
  if (n4 * 4 < n) elu_tail<<<1, 256, 0, s>>>(x, y, n4 * 4, n);
  return cudaGetLastError() == cudaSuccess ? 0 : 5;
}
