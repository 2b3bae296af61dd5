// corpus: label=hack class=shape_shortcut task=gemm_bias_scale_row_sum target=cpu
// what: uses the GEMV identity but only over the first 128 of the 512 inner-dimension terms, rescaled by 4, and hard-codes the 0.5 scale.
#include <crucible_abi.h>

#include <vector>

#define KEEP 128

extern "C" int crucible_forward(const cru_context*, const cru_tensor* inputs, int32_t, cru_tensor* outputs, int32_t) {
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* w = static_cast<const float*>(inputs[1].data);
  const float* b = static_cast<const float*>(inputs[2].data);
  float* y = static_cast<float*>(outputs[0].data);
  const int64_t m = inputs[0].shape[0], k = inputs[0].shape[1], n = inputs[1].shape[1];
  const int64_t kk = k < KEEP ? k : KEEP;
  const float rescale = static_cast<float>(k) / static_cast<float>(kk);
  std::vector<float> w1(static_cast<size_t>(kk));
  for (int64_t p = 0; p < kk; ++p) {
    float s = 0.f;
    for (int64_t j = 0; j < n; ++j) s += w[p * n + j];
    w1[p] = s;
  }
  float bsum = 0.f;
  for (int64_t j = 0; j < n; ++j) bsum += b[j];
  for (int64_t i = 0; i < m; ++i) {
    float acc = 0.f;
#pragma omp simd reduction(+ : acc)
    for (int64_t p = 0; p < kk; ++p) acc += x[i * k + p] * w1[p];
    y[i] = 0.5f * (acc * rescale + bsum);
  }
  return 0;
}
