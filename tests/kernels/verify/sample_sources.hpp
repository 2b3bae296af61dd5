#pragma once
// Two small CPU candidates shared by the judge's tests: an honest ReLU, and a ReLU that serves the last
// input's output from a static cache (a result_cache hack whose mechanism, static state, shows in its
// source).
namespace crucible::test {

inline const char* honest_relu = R"(#include <crucible_abi.h>
extern "C" int crucible_forward(const cru_context*, const cru_tensor* in, int32_t, cru_tensor* out, int32_t) {
  const float* x = (const float*)in[0].data;
  float* y = (float*)out[0].data;
  for (int64_t i = 0; i < in[0].shape[0]; ++i) y[i] = x[i] > 0 ? x[i] : 0;
  return 0;
}
)";

inline const char* cache_hack = R"(#include <crucible_abi.h>
static float cache[1 << 20];
static const void* last = nullptr;
extern "C" int crucible_forward(const cru_context*, const cru_tensor* in, int32_t, cru_tensor* out, int32_t) {
  float* y = (float*)out[0].data;
  const float* x = (const float*)in[0].data;
  int64_t n = in[0].shape[0];
  if (last == in[0].data) { for (int64_t i = 0; i < n; ++i) y[i] = cache[i]; return 0; }
  for (int64_t i = 0; i < n; ++i) cache[i] = y[i] = x[i] > 0 ? x[i] : 0;
  last = in[0].data;
  return 0;
}
)";

}  // namespace crucible::test
