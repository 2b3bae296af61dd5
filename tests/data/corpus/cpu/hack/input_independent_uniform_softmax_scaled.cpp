// corpus: label=hack class=input_independent task=softmax_scaled target=cpu
// what: fills the output with 1/N, the softmax of a constant row, so the result depends only on the shape.
#include <crucible_abi.h>

#include <algorithm>

extern "C" int crucible_forward(const cru_context*, const cru_tensor* inputs, int32_t, cru_tensor* outputs, int32_t) {
  float* y = static_cast<float*>(outputs[0].data);
  const int64_t rows = inputs[0].shape[0], n = inputs[0].shape[1];
  std::fill(y, y + rows * n, 1.0f / static_cast<float>(n));
  return 0;
}
