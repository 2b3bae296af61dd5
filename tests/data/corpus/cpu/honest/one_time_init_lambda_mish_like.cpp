// corpus: label=honest class=one_time_init task=mish_like target=cpu
// what: tanh(softplus(x)) * 0.5 + 0.1 with exp from a function-local static std::array of Taylor coefficients built by a lambda on first use; the lazily built array looks like kept state but holds 1/k! only.
#include <crucible_abi.h>

#include <array>
#include <cmath>
#include <cstdint>

namespace {

const std::array<double, 12>& taylor() {
  static const std::array<double, 12> c = [] {
    std::array<double, 12> a{};
    double f = 1.0;
    for (int k = 0; k < 12; ++k) {
      a[k] = 1.0 / f;
      f *= (k + 1);
    }
    return a;
  }();
  return c;
}

inline double exp_reduced(double x, const std::array<double, 12>& c) {  // x in [-90, 20]
  const double k = std::nearbyint(x * 1.4426950408889634);
  const double r = x - k * 0.6931471805599453;  // |r| <= ln2 / 2 (plus rounding)
  double p = c[11];
  for (int i = 10; i >= 0; --i) p = p * r + c[i];
  return std::ldexp(p, static_cast<int>(k));
}

}  // namespace

extern "C" int crucible_forward(const cru_context*, const cru_tensor* inputs, int32_t n_inputs,
                                cru_tensor* outputs, int32_t n_outputs) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  const auto& c = taylor();
  const float* x = static_cast<const float*>(inputs[0].data);
  float* out = static_cast<float*>(outputs[0].data);
  int64_t n = 1;
  for (int d = 0; d < inputs[0].ndim; ++d) n *= inputs[0].shape[d];
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    double t;
    if (v > 20.0) {
      t = 1.0;  // softplus is the identity past 20 and tanh(>= 20) is 1 in float
    } else {
      const double e = exp_reduced(v < -90.0 ? -90.0 : v, c);
      const double m = e * (e + 2.0);
      t = m / (m + 2.0);  // tanh(log1p(e))
    }
    out[i] = static_cast<float>(t * 0.5 + 0.1);
  }
  return 0;
}
