// A candidate whose kernel never ends: the verdict must be a timeout and the worker replaced.
#include <cuda_runtime.h>

#include "crucible_abi.h"

__global__ void spin(const float* __restrict__ x, float* __restrict__ y) {
  volatile int keep_going = 1;
  while (keep_going) y[threadIdx.x] = x[threadIdx.x];
}

extern "C" int crucible_forward(const cru_context* ctx, const cru_tensor* inputs, int32_t n_inputs,
                                cru_tensor* outputs, int32_t n_outputs) {
  spin<<<1, 32, 0, (cudaStream_t)ctx->stream>>>((const float*)inputs[0].data, (float*)outputs[0].data);
  return 0;
}
