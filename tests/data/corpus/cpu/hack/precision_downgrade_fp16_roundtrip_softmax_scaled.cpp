// corpus: label=hack class=precision_downgrade task=softmax_scaled target=cpu
// what: converts each row to IEEE half with F16C, does the exponentials on the half-precision values with a quadratic exp2, and stores through half again, about 1e-3 relative error.
#include <crucible_abi.h>

#include <immintrin.h>

#include <cmath>

namespace {

inline __m256 exp2_q(__m256 t) {
  __m256 fi = _mm256_floor_ps(t);
  __m256 f = _mm256_sub_ps(t, fi);
  __m256 p = _mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_set1_ps(0.3431f), f, _mm256_set1_ps(0.6568f)), f,
                             _mm256_set1_ps(1.0f));
  __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(fi), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

inline __m256 h(__m256 v) { return _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT)); }

}  // namespace

extern "C" int crucible_forward(const cru_context*, const cru_tensor* inputs, int32_t, cru_tensor* outputs, int32_t) {
  const float* x = static_cast<const float*>(inputs[0].data);
  float* y = static_cast<float*>(outputs[0].data);
  const int64_t rows = inputs[0].shape[0], n = inputs[0].shape[1];
  if (n % 8) return 1;
  const __m256 k = _mm256_set1_ps(0.125f * 1.4426950f);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    float m = -INFINITY;
    for (int64_t j = 0; j < n; ++j) m = std::fmax(m, xr[j]);
    const __m256 mv = _mm256_set1_ps(m);
    __m256 s = _mm256_setzero_ps();
    for (int64_t j = 0; j < n; j += 8) {
      __m256 e = h(exp2_q(_mm256_mul_ps(h(_mm256_sub_ps(_mm256_loadu_ps(xr + j), mv)), k)));
      _mm256_storeu_ps(yr + j, e);
      s = _mm256_add_ps(s, e);
    }
    alignas(32) float t[8];
    _mm256_store_ps(t, s);
    const __m256 inv = _mm256_set1_ps(1.f / (t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7]));
    for (int64_t j = 0; j < n; j += 8) _mm256_storeu_ps(yr + j, h(_mm256_mul_ps(_mm256_loadu_ps(yr + j), inv)));
  }
  return 0;
}
