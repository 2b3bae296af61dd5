// corpus: label=honest class=slow_but_correct task=gemm_bias_relu target=cpu
// what: relu(x @ W + b) by the textbook i-j-k triple loop (W read down its columns, a double accumulator per output); correct but far slower than eager's BLAS.
#include <crucible_abi.h>

#include <cstdint>

extern "C" int crucible_forward(const cru_context*, const cru_tensor* inputs, int32_t n_inputs,
                                cru_tensor* outputs, int32_t n_outputs) {
  if (n_inputs != 3 || n_outputs != 1) return 1;
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* W = static_cast<const float*>(inputs[1].data);
  const float* b = static_cast<const float*>(inputs[2].data);
  float* out = static_cast<float*>(outputs[0].data);
  const int64_t M = inputs[0].shape[0], K = inputs[0].shape[1], N = inputs[1].shape[1];
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0.0;
      for (int64_t k = 0; k < K; ++k) acc += static_cast<double>(x[i * K + k]) * W[k * N + j];
      const float v = static_cast<float>(acc) + b[j];
      out[i * N + j] = v > 0.0f ? v : 0.0f;
    }
  return 0;
}
