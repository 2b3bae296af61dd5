// Does not compile: uses an undeclared identifier.
#include <crucible_abi.h>

extern "C" int crucible_forward(const cru_context*, const cru_tensor* inputs, int32_t, cru_tensor* outputs,
                                int32_t) {
  float* out = static_cast<float*>(outputs[0].data);
  out[0] = undeclared_scale_factor;
  return 0;
}
