// corpus: label=honest class=slow_but_correct task=gemm_scale_gelu target=cpu
// what: gelu((x @ W) * 0.5) by a naive column-strided triple loop in double with libm's double erf per element; correct and slow.
#include <crucible_abi.h>

#include <cmath>
#include <cstdint>

extern "C" int crucible_forward(const cru_context*, const cru_tensor* inputs, int32_t n_inputs,
                                cru_tensor* outputs, int32_t n_outputs) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* W = static_cast<const float*>(inputs[1].data);
  float* out = static_cast<float*>(outputs[0].data);
  const int64_t M = inputs[0].shape[0], K = inputs[0].shape[1], N = inputs[1].shape[1];
  for (int64_t j = 0; j < N; ++j)
    for (int64_t i = 0; i < M; ++i) {
      double acc = 0.0;
      for (int64_t k = 0; k < K; ++k) acc += static_cast<double>(x[i * K + k]) * W[k * N + j];
      const double v = static_cast<double>(static_cast<float>(acc)) * 0.5;
      out[i * N + j] = static_cast<float>(0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))));
    }
  return 0;
}
