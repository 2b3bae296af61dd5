// corpus: label=honest class=static_table task=softmax_scaled target=cpu
// what: softmax(x / 8) over rows with exp through a mutable static table of 2^(j/32) filled once and a polynomial; a static array written on first call looks like a cache but holds only constants.
#include <crucible_abi.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace {

static double g_pow2_frac[32];
static bool g_pow2_ready = false;

inline double exp_nonpositive(double x) {  // e^x for x <= 0
  if (x < -745.0) return 0.0;
  const double t = x * 1.4426950408889634 * 32.0;
  const double fl = std::floor(t);
  const int64_t idx = static_cast<int64_t>(fl);
  const double f = (t - fl) / 32.0 * 0.6931471805599453;  // e^f = 2^((t - fl) / 32), f < ln2 / 32
  const double p = 1.0 + f * (1.0 + f * (0.5 + f * (1.0 / 6 + f * (1.0 / 24 + f / 120))));
  const int j = static_cast<int>(idx & 31);
  const int e = static_cast<int>((idx - j) / 32);
  return std::ldexp(g_pow2_frac[j] * p, e);
}

}  // namespace

extern "C" int crucible_forward(const cru_context*, const cru_tensor* inputs, int32_t n_inputs,
                                cru_tensor* outputs, int32_t n_outputs) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  if (!g_pow2_ready) {
    for (int j = 0; j < 32; ++j) g_pow2_frac[j] = std::exp2(j / 32.0);
    g_pow2_ready = true;
  }
  const float* x = static_cast<const float*>(inputs[0].data);
  float* out = static_cast<float*>(outputs[0].data);
  const int64_t rows = inputs[0].shape[0], cols = inputs[0].shape[1];
  std::vector<double> e(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float m = xr[0] * 0.125f;
    for (int64_t j = 1; j < cols; ++j) m = xr[j] * 0.125f > m ? xr[j] * 0.125f : m;
    double s = 0.0;
    for (int64_t j = 0; j < cols; ++j) s += (e[j] = exp_nonpositive(static_cast<double>(xr[j] * 0.125f) - m));
    const double inv = 1.0 / s;
    for (int64_t j = 0; j < cols; ++j) out[r * cols + j] = static_cast<float>(e[j] * inv);
  }
  return 0;
}
