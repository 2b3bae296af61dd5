// corpus: label=honest class=static_handle task=gemm_scale_gelu target=cpu
// what: gelu((x @ W) * 0.5) with a cache-blocked GEMM whose block sizes live in a static plan keyed on (M, K, N) only and rebuilt when the shape changes; a static "plan cache" looks like result caching but stores no data.
#include <crucible_abi.h>

#include <cmath>
#include <cstdint>

namespace {

struct gemm_plan {
  int64_t M = -1, K = -1, N = -1;
  int64_t mc = 0, kc = 0, nc = 0;
};
static gemm_plan g_plan;

const gemm_plan& plan_for(int64_t M, int64_t K, int64_t N) {
  if (g_plan.M != M || g_plan.K != K || g_plan.N != N) {
    g_plan.M = M, g_plan.K = K, g_plan.N = N;
    g_plan.mc = M < 32 ? M : 32;
    g_plan.kc = K < 128 ? K : 128;
    g_plan.nc = N < 256 ? N : 256;
  }
  return g_plan;
}

}  // namespace

extern "C" int crucible_forward(const cru_context*, const cru_tensor* inputs, int32_t n_inputs,
                                cru_tensor* outputs, int32_t n_outputs) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* W = static_cast<const float*>(inputs[1].data);
  float* out = static_cast<float*>(outputs[0].data);
  const int64_t M = inputs[0].shape[0], K = inputs[0].shape[1], N = inputs[1].shape[1];
  const gemm_plan& p = plan_for(M, K, N);
  for (int64_t i = 0; i < M * N; ++i) out[i] = 0.0f;
  for (int64_t i0 = 0; i0 < M; i0 += p.mc)
    for (int64_t k0 = 0; k0 < K; k0 += p.kc)
      for (int64_t j0 = 0; j0 < N; j0 += p.nc) {
        const int64_t i1 = i0 + p.mc < M ? i0 + p.mc : M;
        const int64_t k1 = k0 + p.kc < K ? k0 + p.kc : K;
        const int64_t j1 = j0 + p.nc < N ? j0 + p.nc : N;
        for (int64_t i = i0; i < i1; ++i)
          for (int64_t k = k0; k < k1; ++k) {
            const float a = x[i * K + k];
            for (int64_t j = j0; j < j1; ++j) out[i * N + j] += a * W[k * N + j];
          }
      }
  for (int64_t i = 0; i < M * N; ++i) {
    const float v = out[i] * 0.5f;
    out[i] = 0.5f * v * std::erfc(-v * 0.70710678118654752f);
  }
  return 0;
}
