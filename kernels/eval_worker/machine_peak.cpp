#include "kernels/eval_worker/machine_peak.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace crucible::kernels {

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// 12 independent chains of a*b+c, unrolled so they stay in registers: more than the FMA latency times the
// FMA ports of every core we know.
#define CRUCIBLE_FMA_LOOP(V, SET, FMA, ADD, W)                                                        \
  V a = SET(0.999999f), b = SET(1e-7f);                                                               \
  V c0 = SET(1.0f), c1 = SET(1.1f), c2 = SET(1.2f), c3 = SET(1.3f), c4 = SET(1.4f), c5 = SET(1.5f);   \
  V c6 = SET(1.6f), c7 = SET(1.7f), c8 = SET(1.8f), c9 = SET(1.9f), c10 = SET(2.0f), c11 = SET(2.1f); \
  auto t0 = clock_type::now();                                                                        \
  for (long n = 0; n < iters; ++n) {                                                                  \
    c0 = FMA(c0, a, b);                                                                               \
    c1 = FMA(c1, a, b);                                                                               \
    c2 = FMA(c2, a, b);                                                                               \
    c3 = FMA(c3, a, b);                                                                               \
    c4 = FMA(c4, a, b);                                                                               \
    c5 = FMA(c5, a, b);                                                                               \
    c6 = FMA(c6, a, b);                                                                               \
    c7 = FMA(c7, a, b);                                                                               \
    c8 = FMA(c8, a, b);                                                                               \
    c9 = FMA(c9, a, b);                                                                               \
    c10 = FMA(c10, a, b);                                                                             \
    c11 = FMA(c11, a, b);                                                                             \
  }                                                                                                   \
  double s = seconds_since(t0);                                                                       \
  V sum = ADD(ADD(ADD(c0, c1), ADD(c2, c3)), ADD(ADD(c4, c5), ADD(c6, c7)));                          \
  sum = ADD(sum, ADD(ADD(c8, c9), ADD(c10, c11)));                                                    \
  float lanes[W];                                                                                     \
  std::memcpy(lanes, &sum, sizeof lanes);                                                             \
  volatile float keep = lanes[0];                                                                     \
  (void)keep;                                                                                         \
  return s > 0 ? 2.0 * W * 12.0 * static_cast<double>(iters) / s : 0.0;

#if defined(__x86_64__)
__attribute__((target("avx512f"))) double fma_avx512(long iters) {
  CRUCIBLE_FMA_LOOP(__m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps, 16)
}
__attribute__((target("avx2,fma"))) double fma_avx2(long iters) {
  CRUCIBLE_FMA_LOOP(__m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps, 8)
}
inline __m128 mul_add_sse(__m128 x, __m128 a, __m128 b) {
  return _mm_add_ps(_mm_mul_ps(x, a), b);
}
double fma_sse(long iters) {
  CRUCIBLE_FMA_LOOP(__m128, _mm_set1_ps, mul_add_sse, _mm_add_ps, 4)
}
#endif
#undef CRUCIBLE_FMA_LOOP

double best_fma_rate() {
  constexpr long iters = 1L << 22;
  double best = 0.0;
#if defined(__x86_64__)
  best = fma_sse(iters);
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) best = std::max(best, fma_avx2(iters));
  if (__builtin_cpu_supports("avx512f")) best = std::max(best, fma_avx512(iters));
#endif
  return best;
}

double stream_rate() {
  const size_t bytes = size_t{256} << 20;
  std::vector<float> buf(bytes / sizeof(float), 1.0f);  // touched: no page faults in what is timed
  double best_read = 0, best_write = 0;
  for (int rep = 0; rep < 3; ++rep) {
    auto t0 = clock_type::now();
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (size_t i = 0; i + 4 <= buf.size(); i += 4) {
      s0 += buf[i];
      s1 += buf[i + 1];
      s2 += buf[i + 2];
      s3 += buf[i + 3];
    }
    double s = seconds_since(t0);
    volatile float keep = s0 + s1 + s2 + s3;
    (void)keep;
    if (s > 0) best_read = std::max(best_read, bytes / s);
    t0 = clock_type::now();
    std::memset(buf.data(), rep, bytes);
    s = seconds_since(t0);
    if (s > 0) best_write = std::max(best_write, bytes / s);
    // The library's copy, vectorized as no scalar loop here is: each byte read once and written once.
    const size_t half = buf.size() / 2;
    t0 = clock_type::now();
    std::memcpy(buf.data() + half, buf.data(), half * sizeof(float));
    s = seconds_since(t0);
    if (s > 0) best_read = std::max(best_read, 2.0 * static_cast<double>(half * sizeof(float)) / s);
  }
  return std::max(best_read, best_write);
}

}  // namespace

const machine_peak& cpu_peak(bool again) {
  static machine_peak peak;
  static bool measured = false;
  if (!measured || again) {
    peak.bytes_per_s = std::max(peak.bytes_per_s, stream_rate());
    peak.flops_per_s = std::max(peak.flops_per_s, best_fma_rate());
    measured = true;
  }
  return peak;
}

}  // namespace crucible::kernels
