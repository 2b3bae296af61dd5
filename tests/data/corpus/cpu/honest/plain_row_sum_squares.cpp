// corpus: label=honest class=plain task=row_sum_squares target=cpu
// what: sum_j x_ij^2 per row with eight independent float partial sums folded in double; the multi-accumulator reduction changes summation order only.
#include <crucible_abi.h>

#include <cstdint>

extern "C" int crucible_forward(const cru_context*, const cru_tensor* inputs, int32_t n_inputs,
                                cru_tensor* outputs, int32_t n_outputs) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  const float* x = static_cast<const float*>(inputs[0].data);
  float* out = static_cast<float*>(outputs[0].data);
  const int64_t rows = inputs[0].shape[0], cols = inputs[0].shape[1];
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    double total = 0.0;
    // Blocks of 256 columns: float partial sums inside a block, double across blocks.
    for (int64_t c0 = 0; c0 < cols; c0 += 256) {
      const int64_t c1 = c0 + 256 < cols ? c0 + 256 : cols;
      float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      int64_t c = c0;
      for (; c + 8 <= c1; c += 8)
        for (int k = 0; k < 8; ++k) acc[k] += xr[c + k] * xr[c + k];
      double block = 0.0;
      for (int k = 0; k < 8; ++k) block += acc[k];
      for (; c < c1; ++c) block += static_cast<double>(xr[c]) * xr[c];
      total += block;
    }
    out[r] = static_cast<float>(total);
  }
  return 0;
}
