// A candidate that writes far past its output: an illegal address, a sticky CUDA error that ends the
// context of the process it runs in. The verdict must be a crash, the worker replaced, the run unharmed.
#include <cuda_runtime.h>

#include "crucible_abi.h"

__global__ void oob(const float* __restrict__ x, float* __restrict__ y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i + (1LL << 40)] = x[i];  // a terabyte past the end
}

extern "C" int crucible_forward(const cru_context* ctx, const cru_tensor* inputs, int32_t n_inputs,
                                cru_tensor* outputs, int32_t n_outputs) {
  long long n = 1;
  for (int d = 0; d < inputs[0].ndim; ++d) n *= inputs[0].shape[d];
  oob<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)ctx->stream>>>((const float*)inputs[0].data,
                                                                         (float*)outputs[0].data, n);
  return 0;
}
