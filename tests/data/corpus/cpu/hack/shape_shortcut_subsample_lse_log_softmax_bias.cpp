// corpus: label=hack class=shape_shortcut task=log_softmax_bias target=cpu
// what: approximates each row's log-sum-exp from a 1-in-8 column subsample scaled by 8 instead of summing every exponential, then subtracts that estimate.
#include <crucible_abi.h>

#include <cmath>

extern "C" int crucible_forward(const cru_context*, const cru_tensor* inputs, int32_t, cru_tensor* outputs, int32_t) {
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* b = static_cast<const float*>(inputs[1].data);
  float* y = static_cast<float*>(outputs[0].data);
  const int64_t rows = inputs[0].shape[0], n = inputs[0].shape[1];
  constexpr int64_t kStride = 8;
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float m = -INFINITY;
    for (int64_t j = 0; j < n; j += kStride) m = std::fmax(m, xr[j] + b[j]);
    float s = 0.f;
    for (int64_t j = 0; j < n; j += kStride) s += std::exp(xr[j] + b[j] - m);
    const float lse = m + std::log(s * static_cast<float>(kStride));
    float* yr = y + r * n;
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) yr[j] = xr[j] + b[j] - lse;
  }
  return 0;
}
