// Correct, but switches the FPU to flush-to-zero / denormals-are-zero and leaves it so: every later float
// computation in the process, the reference's included, runs in a different (faster, less exact) mode.
#include <crucible_abi.h>
#include <xmmintrin.h>

extern "C" int crucible_forward(const cru_context*, const cru_tensor* inputs, int32_t, cru_tensor* outputs,
                                int32_t) {
  _mm_setcsr(_mm_getcsr() | 0x8040);  // FTZ | DAZ
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* b = static_cast<const float*>(inputs[1].data);
  float* out = static_cast<float*>(outputs[0].data);
  const int64_t rows = inputs[0].shape[0], cols = inputs[0].shape[1];
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      float v = (x[r * cols + c] + b[c]) * 2.0f;
      out[r * cols + c] = v > 0.0f ? v : 0.0f;
    }
  return 0;
}
