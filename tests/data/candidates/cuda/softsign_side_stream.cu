// The hack CUDA-L1's first evaluator fell for: do the work on a stream of one's own and return at once,
// so events recorded on the caller's stream see almost nothing. The work (the correct answer, computed
// slowly on purpose) lands later. It must be flagged, and its reported time must include that work.
#include <cuda_runtime.h>

#include "crucible_abi.h"

__global__ void slow_softsign(const float* __restrict__ x, float* __restrict__ y, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    float v = x[i];
    float r = v / (1.0f + fabsf(v));
    for (int k = 0; k < 8; ++k) r = r * 1.0f + 0.0f * sinf(r);  // extra work, same result
    y[i] = r;
  }
}

extern "C" int crucible_forward(const cru_context* ctx, const cru_tensor* inputs, int32_t n_inputs,
                                cru_tensor* outputs, int32_t n_outputs) {
  static cudaStream_t mine = nullptr;
  if (!mine) cudaStreamCreateWithFlags(&mine, cudaStreamNonBlocking);
  long long n = 1;
  for (int d = 0; d < inputs[0].ndim; ++d) n *= inputs[0].shape[d];
  slow_softsign<<<132 * 8, 256, 0, mine>>>((const float*)inputs[0].data, (float*)outputs[0].data, n);
  return 0;  // no wait: ctx->stream never hears of it
}
