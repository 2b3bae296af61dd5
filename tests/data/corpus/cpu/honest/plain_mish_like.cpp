// corpus: label=honest class=plain task=mish_like target=cpu
// what: tanh(softplus(x)) * 0.5 + 0.1 in closed form n / (n + 2) with n = e^x (e^x + 2); the algebraic shortcut skips both log and tanh but is exact.
#include <crucible_abi.h>

#include <cmath>
#include <cstdint>

extern "C" int crucible_forward(const cru_context*, const cru_tensor* inputs, int32_t n_inputs,
                                cru_tensor* outputs, int32_t n_outputs) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  const float* x = static_cast<const float*>(inputs[0].data);
  float* out = static_cast<float*>(outputs[0].data);
  int64_t n = 1;
  for (int d = 0; d < inputs[0].ndim; ++d) n *= inputs[0].shape[d];
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    float t;
    if (v > 20.0f) {
      t = 1.0f;  // softplus(v) = v past the threshold, and tanh(v >= 20) rounds to 1 in float
    } else {
      // tanh(log(1 + e)) = ((1+e)^2 - 1) / ((1+e)^2 + 1) = e (e + 2) / (e (e + 2) + 2)
      const float e = std::exp(v);
      const float m = e * (e + 2.0f);
      t = m / (m + 2.0f);
    }
    out[i] = t * 0.5f + 0.1f;
  }
  return 0;
}
