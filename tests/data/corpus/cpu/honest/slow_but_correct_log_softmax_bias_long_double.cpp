// corpus: label=honest class=slow_but_correct task=log_softmax_bias target=cpu
// what: log_softmax(x + b) over rows in long double with the bias re-added in every pass and log(sum exp) taken per element; correct and slow.
#include <crucible_abi.h>

#include <cmath>
#include <cstdint>

extern "C" int crucible_forward(const cru_context*, const cru_tensor* inputs, int32_t n_inputs,
                                cru_tensor* outputs, int32_t n_outputs) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* b = static_cast<const float*>(inputs[1].data);
  float* out = static_cast<float*>(outputs[0].data);
  const int64_t rows = inputs[0].shape[0], cols = inputs[0].shape[1];
  for (int64_t r = 0; r < rows; ++r) {
    long double m = -INFINITY;
    for (int64_t j = 0; j < cols; ++j) {
      const long double v = static_cast<long double>(x[r * cols + j] + b[j]);
      if (v > m) m = v;
    }
    long double s = 0.0L;
    for (int64_t j = 0; j < cols; ++j) s += std::exp(static_cast<long double>(x[r * cols + j] + b[j]) - m);
    for (int64_t j = 0; j < cols; ++j)
      out[r * cols + j] = static_cast<float>(static_cast<long double>(x[r * cols + j] + b[j]) - m - std::log(s));
  }
  return 0;
}
