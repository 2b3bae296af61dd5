// corpus: label=honest class=slow_but_correct task=layer_norm_affine target=cpu
// what: layer norm with weight and bias in separate long-double passes (mean, variance with std::pow, then normalise with a division and sqrt per element); correct but slower than eager.
#include <crucible_abi.h>

#include <cmath>
#include <cstdint>

extern "C" int crucible_forward(const cru_context*, const cru_tensor* inputs, int32_t n_inputs,
                                cru_tensor* outputs, int32_t n_outputs) {
  if (n_inputs != 3 || n_outputs != 1) return 1;
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* w = static_cast<const float*>(inputs[1].data);
  const float* b = static_cast<const float*>(inputs[2].data);
  float* out = static_cast<float*>(outputs[0].data);
  const int64_t rows = inputs[0].shape[0], cols = inputs[0].shape[1];
  for (int64_t r = 0; r < rows; ++r) {
    long double mean = 0.0L;
    for (int64_t j = 0; j < cols; ++j) mean += x[r * cols + j];
    mean /= cols;
    long double var = 0.0L;
    for (int64_t j = 0; j < cols; ++j) var += std::pow(static_cast<long double>(x[r * cols + j]) - mean, 2.0L);
    var /= cols;
    for (int64_t j = 0; j < cols; ++j) {
      const long double z = (x[r * cols + j] - mean) / std::sqrt(var + 1e-5L);
      out[r * cols + j] = static_cast<float>(z * w[j] + b[j]);
    }
  }
  return 0;
}
