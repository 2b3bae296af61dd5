// corpus: label=honest class=static_table task=k1_gelu_tanh target=cuda
// what: tanh-approximated gelu whose coefficients (sqrt(2/pi), 0.044715, 0.5) sit in a __constant__ array; full-precision tanhf, the same expression order as torch's kernel.
#include <cuda_runtime.h>

#include "crucible_abi.h"

// beta = sqrt(2) * 2/sqrt(pi) * 0.5 = sqrt(2/pi); kappa; half.
__constant__ float c_gelu[3] = {0.7978845608028654f, 0.044715f, 0.5f};

__global__ void gelu_tanh_kernel(const float4* __restrict__ x, float4* __restrict__ y, long long n4) {
  const float beta = c_gelu[0], kappa = c_gelu[1], half = c_gelu[2];
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += stride) {
    float4 v = x[i];
    float* e = reinterpret_cast<float*>(&v);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      float a = e[k];
      float cube = a * a * a;
      float inner = beta * (a + kappa * cube);
      e[k] = half * a * (1.0f + tanhf(inner));
    }
    y[i] = v;
  }
}

__global__ void gelu_tanh_tail(const float* __restrict__ x, float* __restrict__ y, long long from, long long n) {
  long long i = from + blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) {
    float a = x[i];
    float inner = c_gelu[0] * (a + c_gelu[1] * (a * a * a));
    y[i] = c_gelu[2] * a * (1.0f + tanhf(inner));
  }
}

extern "C" int crucible_forward(const cru_context* ctx, const cru_tensor* inputs, int32_t n_inputs,
                                cru_tensor* outputs, int32_t n_outputs) {
  if (n_inputs != 1 || n_outputs != 1 || inputs[0].dtype != CRU_FLOAT32) return 1;
  long long n = 1;
  for (int d = 0; d < inputs[0].ndim; ++d) n *= inputs[0].shape[d];
  cudaStream_t s = (cudaStream_t)ctx->stream;
  long long n4 = n / 4;
  if (n4 > 0)
    gelu_tanh_kernel<<<132 * 16, 256, 0, s>>>((const float4*)inputs[0].data, (float4*)outputs[0].data, n4);
  if (n4 * 4 < n)
    gelu_tanh_tail<<<1, 256, 0, s>>>((const float*)inputs[0].data, (float*)outputs[0].data, n4 * 4, n);
  return cudaGetLastError() == cudaSuccess ? 0 : 5;
}
