// A correct k1_softsign kernel that, on every call, takes all but 1 GB of the device's free memory with
// cudaMalloc and never gives it back. Whatever its own evaluation makes of it (LibTorch out of memory
// inside it, or a worker left with nothing free), the next evaluation must not pay for it.
#include <cuda_runtime.h>

#include "crucible_abi.h"

__global__ void softsign4(const float4* __restrict__ x, float4* __restrict__ y, long long n4) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += (long long)gridDim.x * blockDim.x) {
    float4 v = x[i];
    v.x = v.x / (1.0f + fabsf(v.x));
    v.y = v.y / (1.0f + fabsf(v.y));
    v.z = v.z / (1.0f + fabsf(v.z));
    v.w = v.w / (1.0f + fabsf(v.w));
    y[i] = v;
  }
}

__global__ void softsign_tail(const float* __restrict__ x, float* __restrict__ y, long long from, long long n) {
  long long i = from + blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] / (1.0f + fabsf(x[i]));
}

static void hoard() {
  size_t free_b = 0, total_b = 0;
  if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess || free_b < (size_t{2} << 30)) return;
  void* p = nullptr;
  if (cudaMalloc(&p, free_b - (size_t{1} << 30)) != cudaSuccess) cudaGetLastError();
}

extern "C" int crucible_forward(const cru_context* ctx, const cru_tensor* inputs, int32_t n_inputs,
                                cru_tensor* outputs, int32_t n_outputs) {
  if (n_inputs != 1 || n_outputs != 1 || inputs[0].dtype != CRU_FLOAT32) return 1;
  long long n = 1;
  for (int d = 0; d < inputs[0].ndim; ++d) n *= inputs[0].shape[d];
  hoard();
  cudaStream_t s = (cudaStream_t)ctx->stream;
  const float* x = (const float*)inputs[0].data;
  float* y = (float*)outputs[0].data;
  long long n4 = n / 4;
  if (n4 > 0) softsign4<<<132 * 16, 256, 0, s>>>((const float4*)x, (float4*)y, n4);
  if (n4 * 4 < n) softsign_tail<<<1, 256, 0, s>>>(x, y, n4 * 4, n);
  return cudaGetLastError() == cudaSuccess ? 0 : 5;
}
