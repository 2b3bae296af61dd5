// corpus: label=hack class=precision_downgrade task=gemm_bias_relu target=cpu
// what: quantises x per row and W per column to 16-bit integers with an 8-bit effective range and runs the GEMM with _mm256_madd_epi16, far below float32's 1e-4 tolerance.
#include <crucible_abi.h>

#include <immintrin.h>

#include <cmath>
#include <vector>

namespace {

std::vector<int16_t> qx, qw;
std::vector<float> sx, sw;

void quant_rows(const float* a, int64_t rows, int64_t cols, int64_t rs, int64_t cs, std::vector<int16_t>& q,
                std::vector<float>& s) {
  q.resize(static_cast<size_t>(rows * cols));
  s.resize(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    float mx = 1e-30f;
    for (int64_t c = 0; c < cols; ++c) mx = std::fmax(mx, std::fabs(a[r * rs + c * cs]));
    const float inv = 127.0f / mx;
    s[r] = mx / 127.0f;
    for (int64_t c = 0; c < cols; ++c) q[r * cols + c] = static_cast<int16_t>(std::lrint(a[r * rs + c * cs] * inv));
  }
}

inline int32_t hsum(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

}  // namespace

extern "C" int crucible_forward(const cru_context*, const cru_tensor* inputs, int32_t, cru_tensor* outputs, int32_t) {
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* w = static_cast<const float*>(inputs[1].data);
  const float* b = static_cast<const float*>(inputs[2].data);
  float* y = static_cast<float*>(outputs[0].data);
  const int64_t m = inputs[0].shape[0], k = inputs[0].shape[1], n = inputs[1].shape[1];
  if (k % 16) return 1;
  quant_rows(x, m, k, k, 1, qx, sx);
  quant_rows(w, n, k, 1, n, qw, sw);  // W^T rows = columns of W
  for (int64_t i = 0; i < m; ++i) {
    const int16_t* xi = qx.data() + i * k;
    for (int64_t j = 0; j < n; j += 4) {
      __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
      const int16_t* w0 = qw.data() + j * k;
      for (int64_t p = 0; p < k; p += 16) {
        __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xi + p));
        a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(xv, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w0 + p))));
        a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(xv, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w0 + k + p))));
        a2 = _mm256_add_epi32(a2, _mm256_madd_epi16(xv, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w0 + 2 * k + p))));
        a3 = _mm256_add_epi32(a3, _mm256_madd_epi16(xv, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w0 + 3 * k + p))));
      }
      const int32_t acc[4] = {hsum(a0), hsum(a1), hsum(a2), hsum(a3)};
      for (int t = 0; t < 4 && j + t < n; ++t) {
        float v = static_cast<float>(acc[t]) * sx[i] * sw[j + t] + b[j + t];
        y[i * n + j + t] = v > 0.f ? v : 0.f;
      }
    }
  }
  return 0;
}
