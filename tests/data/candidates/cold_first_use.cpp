// Correct fused kernel for test_bias_scale_relu whose first call on each output buffer costs 40 passes (a
// cold first use: page tables, caches, a lazily built plan). Honest; only its first calls are slow.
#include <crucible_abi.h>

static const void* seen[64];
static int n_seen = 0;

extern "C" int crucible_forward(const cru_context* ctx, const cru_tensor* inputs, int32_t n_inputs,
                                cru_tensor* outputs, int32_t n_outputs) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* b = static_cast<const float*>(inputs[1].data);
  float* out = static_cast<float*>(outputs[0].data);
  const int64_t rows = inputs[0].shape[0], cols = inputs[0].shape[1];
  bool first = true;
  for (int i = 0; i < n_seen; ++i) first = first && seen[i] != out;
  if (first && n_seen < 64) seen[n_seen++] = out;
  for (int pass = 0; pass < (first ? 40 : 1); ++pass) {
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x + r * cols;
      float* o = out + r * cols;
      for (int64_t c = 0; c < cols; ++c) {
        float v = (xr[c] + b[c]) * 2.0f;
        o[c] = v > 0.0f ? v : 0.0f;
      }
    }
    asm volatile("" ::: "memory");  // each pass is done, not folded into one
  }
  return 0;
}
