// A wrong candidate for k1_softsign: x / (1 + x) (forgot the absolute value), fast and plausible-looking.
#include <cuda_runtime.h>

#include "crucible_abi.h"

__global__ void wrong(const float* __restrict__ x, float* __restrict__ y, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    y[i] = x[i] / (1.0f + x[i]);
}

extern "C" int crucible_forward(const cru_context* ctx, const cru_tensor* inputs, int32_t n_inputs,
                                cru_tensor* outputs, int32_t n_outputs) {
  long long n = 1;
  for (int d = 0; d < inputs[0].ndim; ++d) n *= inputs[0].shape[d];
  wrong<<<132 * 16, 256, 0, (cudaStream_t)ctx->stream>>>((const float*)inputs[0].data, (float*)outputs[0].data, n);
  return 0;
}
