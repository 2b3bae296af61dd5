// corpus: label=honest class=thread_local_scratch task=softmax_scaled target=cpu
// what: softmax(x / 8) over rows; the shifted exponentials of one row go into a thread_local float buffer resized to the row length, reused across calls, then are normalised into the output.
#include <crucible_abi.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace {
thread_local std::vector<float> t_row;
}

extern "C" int crucible_forward(const cru_context*, const cru_tensor* inputs, int32_t n_inputs,
                                cru_tensor* outputs, int32_t n_outputs) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  const float* x = static_cast<const float*>(inputs[0].data);
  float* out = static_cast<float*>(outputs[0].data);
  const int64_t rows = inputs[0].shape[0], cols = inputs[0].shape[1];
  if (t_row.size() < static_cast<size_t>(cols)) t_row.resize(static_cast<size_t>(cols));
  float* e = t_row.data();
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float m = xr[0] * 0.125f;
    for (int64_t j = 1; j < cols; ++j) {
      const float v = xr[j] * 0.125f;
      m = v > m ? v : m;
    }
    double s = 0.0;
    for (int64_t j = 0; j < cols; ++j) {
      e[j] = std::exp(xr[j] * 0.125f - m);
      s += e[j];
    }
    const float inv = static_cast<float>(1.0 / s);
    for (int64_t j = 0; j < cols; ++j) out[r * cols + j] = e[j] * inv;
  }
  return 0;
}
