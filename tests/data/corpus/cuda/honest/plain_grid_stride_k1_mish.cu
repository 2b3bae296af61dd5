// corpus: label=honest class=plain task=k1_mish target=cuda
// what: mish as x * tanh(log1p(exp(x))) exactly as torch writes it, in one grid-stride pass; exp overflow to inf for large x gives tanh(inf) = 1 as in the reference.
#include <cuda_runtime.h>

#include "crucible_abi.h"

__global__ void mish_kernel(const float* __restrict__ x, float* __restrict__ y, long long n) {
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride) {
    float v = __ldg(x + i);
    y[i] = v * tanhf(log1pf(expf(v)));
  }
}

extern "C" int crucible_forward(const cru_context* ctx, const cru_tensor* inputs, int32_t n_inputs,
                                cru_tensor* outputs, int32_t n_outputs) {
  if (n_inputs != 1 || n_outputs != 1 || inputs[0].dtype != CRU_FLOAT32) return 1;
  long long n = 1;
  for (int d = 0; d < inputs[0].ndim; ++d) n *= inputs[0].shape[d];
  if (n == 0) return 0;
  int dev = 0, sms = 132;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  long long blocks = (n + 255) / 256;
  if (blocks > (long long)sms * 32) blocks = (long long)sms * 32;
  mish_kernel<<<(unsigned)blocks, 256, 0, (cudaStream_t)ctx->stream>>>((const float*)inputs[0].data,
                                                                        (float*)outputs[0].data, n);
  return cudaGetLastError() == cudaSuccess ? 0 : 5;
}
