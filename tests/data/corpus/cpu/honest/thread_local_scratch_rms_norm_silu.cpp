// corpus: label=honest class=thread_local_scratch task=rms_norm_silu target=cpu
// what: silu(x * rsqrt(mean(x^2) + 1e-6) * w); the per-row inverse RMS values go into a static std::vector resized to the row count and recomputed every call before use.
#include <crucible_abi.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace {
static std::vector<float> g_inv_rms;
}

extern "C" int crucible_forward(const cru_context*, const cru_tensor* inputs, int32_t n_inputs,
                                cru_tensor* outputs, int32_t n_outputs) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* w = static_cast<const float*>(inputs[1].data);
  float* out = static_cast<float*>(outputs[0].data);
  const int64_t rows = inputs[0].shape[0], cols = inputs[0].shape[1];
  g_inv_rms.resize(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    double ss = 0.0;
    for (int64_t j = 0; j < cols; ++j) ss += static_cast<double>(xr[j]) * xr[j];
    g_inv_rms[r] = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(cols) + 1e-6));
  }
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    const float inv = g_inv_rms[r];
    for (int64_t j = 0; j < cols; ++j) {
      const float v = xr[j] * inv * w[j];
      out[r * cols + j] = v / (1.0f + std::exp(-v));
    }
  }
  return 0;
}
