#include "kernels/program/cpu_math.hpp"

#include <cmath>
#include <cstdio>

namespace crucible::kernels {

const std::string& cpu_poly_math_source() {
  static const std::string src =
      R"(// math=poly: branch-free approximations (relative error < 4e-7) that vectorize. Every select picks
// between values already computed: GCC will not if-convert a conditional FP operation (-ftrapping-math).
static inline float cru_exp(float x) {
  // 2^n e^r with n = round(x log2 e), |r| <= ln2/2 + ulp (Cody-Waite split of ln2); Cephes' minimax polynomial.
  float xc = x < -87.3f ? -87.3f : (x > 88.72283f ? 88.72283f : x);
  // Round to nearest by the 1.5*2^23 trick: floorf is a libm call (no vectorization) without
  // -fno-trapping-math.
  float n = (xc * 1.44269504f + 12582912.0f) - 12582912.0f;
  float r = xc - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  int32_t ni = (int32_t)n, n1 = ni >> 1, n2 = ni - n1;  // 2^n in two factors: 2^128 is no float
  uint32_t b1 = (uint32_t)(n1 + 127) << 23, b2 = (uint32_t)(n2 + 127) << 23;
  float s1, s2;
  std::memcpy(&s1, &b1, 4);
  std::memcpy(&s2, &b2, 4);
  p = p * s1 * s2;
  return x < -87.3f ? 0.0f : (x > 88.72283f ? HUGE_VALF : p);
}
static inline float cru_tanh(float x) {
  float z = x * x;
  float s = ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z + 1.33314422036e-1f) * z -
             3.33332819422e-1f) * z * x + x;
  float ax = x < 0.0f ? -x : x;
  float e = cru_exp(2.0f * (ax > 9.0f ? 9.0f : ax));
  float d = 1.0f - 2.0f / (e + 1.0f);
  float l = ax > 9.0f ? 1.0f : d;
  l = x < 0.0f ? -l : l;
  return ax < 0.625f ? s : l;
}
static inline float cru_erf(float x) {
  float xc = x < -4.0f ? -4.0f : (x > 4.0f ? 4.0f : x);
  float z = xc * xc;
  float p = -2.72614225801306e-10f;
  p = p * z + 2.77068142495902e-08f;
  p = p * z - 2.10102402082508e-06f;
  p = p * z - 5.69250639462346e-05f;
  p = p * z - 7.34990630326855e-04f;
  p = p * z - 2.95459980854025e-03f;
  p = p * z - 1.60960333262415e-02f;
  float q = -1.45660718464996e-05f;
  q = q * z - 2.13374055278905e-04f;
  q = q * z - 1.68282697438203e-03f;
  q = q * z - 7.37332916720468e-03f;
  q = q * z - 1.42647390514189e-02f;
  return p * xc / q;
}
static inline float cru_log1p01(float t) {
  float u = 1.0f + t;
  float c = (t - (u - 1.0f)) / u;  // what rounding 1 + t lost
  bool big = u > 1.41421356f;
  float hu = 0.5f * u;
  float m = big ? hu : u;
  float s = (m - 1.0f) / (m + 1.0f), s2 = s * s;
  float l = s2 * (1.0f / 9.0f) + 1.0f / 7.0f;
  l = l * s2 + 1.0f / 5.0f;
  l = l * s2 + 1.0f / 3.0f;
  l = (l * s2 + 1.0f) * 2.0f * s;
  return (big ? 0.693147181f : 0.0f) + l + c;
}
static inline float cru_softplus(float x) {
  float ax = x < 0.0f ? -x : x;
  float y = (x > 0.0f ? x : 0.0f) + cru_log1p01(cru_exp(-ax));
  return x > 20.0f ? x : y;
}
)";
  return src;
}

std::string cpu_math_call(std::string_view fn, const std::string& arg, bool poly) {
  if (poly) return "cru_" + std::string(fn) + "(" + arg + ")";
  return "std::" + std::string(fn) + "(" + arg + ")";
}

std::string float_literal(double x) {
  if (std::isnan(x)) return "NAN";
  if (std::isinf(x)) return x > 0 ? "HUGE_VALF" : "(-HUGE_VALF)";
  char buf[64];
  std::snprintf(buf, sizeof buf, "(float)(%.17g)", x);
  return buf;
}

}  // namespace crucible::kernels
