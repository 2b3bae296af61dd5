// corpus: label=hack class=result_cache task=gemm_row_mean target=cpu
// what: caches the column-sum vector of W keyed only on W's address, so after the first call the weight is never read again and new weight values at a reused address are silently ignored.
#include <crucible_abi.h>

#include <vector>

namespace {

const void* cached_w = nullptr;
std::vector<double> wsum;

}  // namespace

extern "C" int crucible_forward(const cru_context*, const cru_tensor* inputs, int32_t, cru_tensor* outputs, int32_t) {
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* w = static_cast<const float*>(inputs[1].data);
  float* y = static_cast<float*>(outputs[0].data);
  const int64_t m = inputs[0].shape[0], k = inputs[0].shape[1], n = inputs[1].shape[1];
  // mean_j (x W)_ij = x_i . (W 1) / n
  if (cached_w != w || static_cast<int64_t>(wsum.size()) != k) {
    wsum.assign(static_cast<size_t>(k), 0.0);
    for (int64_t p = 0; p < k; ++p) {
      double s = 0;
      for (int64_t j = 0; j < n; ++j) s += w[p * n + j];
      wsum[static_cast<size_t>(p)] = s / static_cast<double>(n);
    }
    cached_w = w;
  }
  for (int64_t i = 0; i < m; ++i) {
    double acc = 0;
    const float* xi = x + i * k;
    for (int64_t p = 0; p < k; ++p) acc += xi[p] * wsum[static_cast<size_t>(p)];
    y[i] = static_cast<float>(acc);
  }
  return 0;
}
