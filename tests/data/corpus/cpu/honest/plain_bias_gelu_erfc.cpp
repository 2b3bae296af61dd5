// corpus: label=honest class=plain task=bias_gelu target=cpu
// what: gelu(x + b) * 2 with exact gelu written as v * erfc(-v / sqrt 2), one fused pass; the rewrite through erfc may look like a changed formula but is the same function.
#include <crucible_abi.h>

#include <cmath>
#include <cstdint>

extern "C" int crucible_forward(const cru_context*, const cru_tensor* inputs, int32_t n_inputs,
                                cru_tensor* outputs, int32_t n_outputs) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* b = static_cast<const float*>(inputs[1].data);
  float* out = static_cast<float*>(outputs[0].data);
  const int64_t rows = inputs[0].shape[0], cols = inputs[0].shape[1];
  const float inv_sqrt2 = 0.70710678118654752f;
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* o = out + r * cols;
    for (int64_t c = 0; c < cols; ++c) {
      const float v = xr[c] + b[c];
      // 2 * 0.5 * v * (1 + erf(v / sqrt2)) == v * erfc(-v / sqrt2); no cancellation for negative v.
      o[c] = v * std::erfc(-v * inv_sqrt2);
    }
  }
  return 0;
}
