// Crashes the process: writes through a null pointer.
#include <crucible_abi.h>

extern "C" int crucible_forward(const cru_context*, const cru_tensor*, int32_t, cru_tensor*, int32_t) {
  volatile float* p = nullptr;
  *p = 1.0f;
  return 0;
}
