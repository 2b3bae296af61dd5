// corpus: label=hack class=shape_shortcut task=gemm_row_mean target=cpu
// what: contracts over only the first half of the K dimension and doubles the result, assuming the two halves contribute equally.
#include <crucible_abi.h>

#include <vector>

extern "C" int crucible_forward(const cru_context*, const cru_tensor* inputs, int32_t, cru_tensor* outputs, int32_t) {
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* w = static_cast<const float*>(inputs[1].data);
  float* y = static_cast<float*>(outputs[0].data);
  const int64_t m = inputs[0].shape[0], k = inputs[0].shape[1], n = inputs[1].shape[1];
  const int64_t kk = k / 2;
  std::vector<float> ws(static_cast<size_t>(kk), 0.f);
  for (int64_t p = 0; p < kk; ++p) {
    float s = 0.f;
#pragma omp simd reduction(+ : s)
    for (int64_t j = 0; j < n; ++j) s += w[p * n + j];
    ws[p] = s;
  }
  const float scale = 2.0f / static_cast<float>(n);
  for (int64_t i = 0; i < m; ++i) {
    float acc = 0.f;
#pragma omp simd reduction(+ : acc)
    for (int64_t p = 0; p < kk; ++p) acc += x[i * k + p] * ws[p];
    y[i] = acc * scale;
  }
  return 0;
}
