// A candidate whose kernel never ends: it waits for an input element to change, which it never does (a
// volatile global read is a side effect, so the compiler must keep the loop). The verdict must be a
// timeout and the worker replaced.
#include <cuda_runtime.h>

#include "crucible_abi.h"

__global__ void spin(const float* __restrict__ x, float* __restrict__ y) {
  const volatile float* p = x;
  const float first = p[0];
  while (p[0] == first) y[threadIdx.x] = first;
}

extern "C" int crucible_forward(const cru_context* ctx, const cru_tensor* inputs, int32_t n_inputs,
                                cru_tensor* outputs, int32_t n_outputs) {
  spin<<<1, 32, 0, (cudaStream_t)ctx->stream>>>((const float*)inputs[0].data, (float*)outputs[0].data);
  return 0;
}
