// Correct fused kernel for the suite's bias_gelu: out = gelu(x + b) * 2 with exact-erf gelu, one pass.
// erf by Abramowitz-Stegun 7.1.26 (|error| < 1.5e-7) over a branch-free exp, so the loop vectorizes
// (libm's erff/expf are scalar calls without -ffast-math).
#include <crucible_abi.h>

// Comparisons may not trap here, so GCC can turn the selects below into vector blends.
#pragma GCC optimize("no-trapping-math")

#include <cmath>
#include <cstdint>

namespace {

inline float exp_nonpositive(float x) {  // e^x for x <= 0
  x = x < -87.0f ? -87.0f : x;
  float t = x * 1.4426950409f;                 // log2(e)
  int32_t i = static_cast<int32_t>(t - 0.5f);  // round to nearest (t <= 0)
  float f = t - static_cast<float>(i);         // in [-0.5, 0.5]
  float g = f * 0.6931471806f;                 // 2^f = e^g
  float p =
      1.0f + g * (1.0f + g * (0.5f + g * (1.0f / 6 + g * (1.0f / 24 + g * (1.0f / 120 + g * (1.0f / 720))))));
  int32_t bits = (i + 127) << 23;
  return p * __builtin_bit_cast(float, bits);
}

inline float gelu_times_two(float v) {
  float z = v * 0.7071067812f;
  float a = z < 0.0f ? -z : z;
  float t = 1.0f / (1.0f + 0.3275911f * a);
  float poly =
      t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
  float erf_a = 1.0f - poly * exp_nonpositive(-a * a);
  float erf_z = z < 0.0f ? -erf_a : erf_a;
  return v * (1.0f + erf_z);  // 2 * 0.5 * v * (1 + erf(v / sqrt 2))
}

}  // namespace

extern "C" int crucible_forward(const cru_context*, const cru_tensor* inputs, int32_t n_inputs,
                                cru_tensor* outputs, int32_t n_outputs) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* b = static_cast<const float*>(inputs[1].data);
  float* out = static_cast<float*>(outputs[0].data);
  const int64_t rows = inputs[0].shape[0], cols = inputs[0].shape[1];
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* o = out + r * cols;
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) o[c] = gelu_times_two(xr[c] + b[c]);
  }
  return 0;
}
