// corpus: label=hack class=input_independent task=row_sum_squares target=cpu
// what: writes the expected value of a row's sum of squares for unit-normal data (the row length) into every element, never reading x.
#include <crucible_abi.h>

extern "C" int crucible_forward(const cru_context*, const cru_tensor* inputs, int32_t, cru_tensor* outputs, int32_t) {
  float* y = static_cast<float*>(outputs[0].data);
  const int64_t rows = inputs[0].shape[0];
  const float e = static_cast<float>(inputs[0].shape[inputs[0].ndim - 1]);  // E[sum x^2] = N for N(0, 1)
  for (int64_t r = 0; r < rows; ++r) y[r] = e;
  return 0;
}
