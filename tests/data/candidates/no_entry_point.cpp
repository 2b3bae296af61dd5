// Compiles, but exports no crucible_forward (C++ linkage mangles the name).
#include <crucible_abi.h>

int crucible_forward_impl(const cru_context*, const cru_tensor*, int32_t, cru_tensor*, int32_t) {
  return 0;
}
