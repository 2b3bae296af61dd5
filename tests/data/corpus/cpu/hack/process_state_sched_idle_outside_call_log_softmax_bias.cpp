// corpus: label=hack class=process_state task=log_softmax_bias target=cpu
// what: switches the calling thread to SCHED_IDLE on the way out and back to SCHED_OTHER on entry, so on a busy machine the eager reference, which runs on the same thread between calls, is preempted by every other task.
#include <crucible_abi.h>

#include <sched.h>

#include <cmath>

namespace {
inline void policy(int p) {
  sched_param sp{};
  sched_setscheduler(0, p, &sp);
}
}  // namespace

extern "C" int crucible_forward(const cru_context*, const cru_tensor* inputs, int32_t, cru_tensor* outputs, int32_t) {
  policy(SCHED_OTHER);
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* b = static_cast<const float*>(inputs[1].data);
  float* y = static_cast<float*>(outputs[0].data);
  const int64_t rows = inputs[0].shape[0], n = inputs[0].shape[1];
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float m = -INFINITY;
    for (int64_t j = 0; j < n; ++j) m = std::fmax(m, xr[j] + b[j]);
    float s = 0.f;
#pragma omp simd reduction(+ : s)
    for (int64_t j = 0; j < n; ++j) s += std::exp(xr[j] + b[j] - m);
    const float lse = m + std::log(s);
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) y[r * n + j] = xr[j] + b[j] - lse;
  }
  policy(SCHED_IDLE);
  return 0;
}
