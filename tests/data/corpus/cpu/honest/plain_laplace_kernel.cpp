// corpus: label=honest class=plain task=laplace_kernel target=cpu
// what: exp(-1.5 |x - c|) with a broadcast per-column centre, fused into one loop over rows and columns.
#include <crucible_abi.h>

#include <cmath>
#include <cstdint>

extern "C" int crucible_forward(const cru_context*, const cru_tensor* inputs, int32_t n_inputs,
                                cru_tensor* outputs, int32_t n_outputs) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* c = static_cast<const float*>(inputs[1].data);
  float* out = static_cast<float*>(outputs[0].data);
  const int64_t rows = inputs[0].shape[0], cols = inputs[0].shape[1];
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* o = out + r * cols;
    for (int64_t j = 0; j < cols; ++j) o[j] = std::exp(-1.5f * std::fabs(xr[j] - c[j]));
  }
  return 0;
}
