#include "kernels/program/cuda_op_code.hpp"

#include <set>

#include "kernels/program/cpu_math.hpp"
#include "kernels/program/group_kinds.hpp"

namespace crucible::kernels {
namespace {

std::string int_lit(int64_t x) {
  return std::to_string(x) + (x > 2147483647LL ? "LL" : "");
}

// The side input's flat index for the element at flat index `idx` of the running tensor, numpy broadcast
// (shapes aligned at the right; a dim of 1 repeats).
std::string broadcast_index(const shape_t& side, const shape_t& running, const std::string& idx) {
  if (side == running) return idx;
  if (numel(side) == 1) return "0";
  shape_t s = side;
  while (!s.empty() && s.front() == 1) s.erase(s.begin());
  const size_t R = running.size(), S = s.size();
  // The side is the running tensor's trailing block: a modulo.
  if (S <= R && shape_t(running.end() - S, running.end()) == s) return "(" + idx + ") % " + int_lit(numel(s));
  std::string out;
  int64_t rstride = 1, sstride = 1;
  for (size_t k = 0; k < S; ++k) {
    const size_t d = S - 1 - k, j = R - 1 - k;  // side dim d aligns with running dim j
    if (s[d] != 1) {
      std::string term = rstride == 1 ? "(" + idx + ")" : "((" + idx + ") / " + int_lit(rstride) + ")";
      if (j > 0) term = "(" + term + " % " + int_lit(running[j]) + ")";
      if (sstride != 1) term += " * " + int_lit(sstride);
      out = out.empty() ? term : term + " + " + out;
    }
    rstride *= running[j];
    sstride *= s[d];
  }
  return out.empty() ? "0" : "(" + out + ")";
}

std::string side(const cuda_group_ctx& g, const chain_op& op, const shape_t& running,
                 const std::string& idx) {
  const std::string& name = op.args[0];
  return "t" + std::to_string(g.input_index(name)) + "[" +
         broadcast_index(input_shape(g.task, name), running, idx) + "]";
}

}  // namespace

std::string cuda_float(double x) {
  return float_literal(x);
}

std::string cuda_check_launch() {
  return "if (cudaGetLastError() != cudaSuccess) return 5;\n";
}

int64_t cuda_blocks(int64_t n, int threads) {
  const int64_t b = (n + threads - 1) / threads;
  return b < 1 ? 1 : b > 65535 * 16 ? 65535 * 16 : b;
}

std::string cuda_elementwise_expr(const cuda_group_ctx& g, const chain_op& op, const std::string& v,
                                  const std::string& idx, const shape_t& running) {
  const bool fast = g.fast_math();
  const std::string E = fast ? "cru_fexp" : "expf", T = fast ? "cru_ftanh" : "tanhf";
  auto lit = [&](const char* attr) { return cuda_float(attr_of(op, attr)); };
  const std::string& o = op.op;
  const std::string V = "(" + v + ")";
  if (o == "relu") return V + " < 0.0f ? 0.0f : " + V;
  if (o == "leaky_relu") return V + " > 0.0f ? " + V + " : " + lit("alpha") + " * " + V;
  if (o == "gelu") return "0.5f * " + V + " * (1.0f + erff(" + V + " * 0.70710678118654752f))";
  if (o == "gelu_tanh")
    return "0.5f * " + V + " * (1.0f + " + T + "(0.79788456080286536f * (" + V + " + 0.044715f * " + V +
           " * " + V + " * " + V + ")))";
  if (o == "silu") return V + " / (1.0f + " + E + "(-" + V + "))";
  if (o == "sigmoid") return "1.0f / (1.0f + " + E + "(-" + V + "))";
  if (o == "tanh") return T + V;
  if (o == "exp") return E + V;
  if (o == "abs") return "fabsf" + V;
  if (o == "neg") return "-" + V;
  if (o == "square") return V + " * " + V;
  if (o == "softplus") return std::string(fast ? "cru_fsoftplus" : "cru_softplus") + V;
  if (o == "clamp")
    return V + " < " + lit("lo") + " ? " + lit("lo") + " : (" + V + " > " + lit("hi") + " ? " + lit("hi") +
           " : " + V + ")";
  if (o == "mul_scalar") return V + " * " + lit("s");
  if (o == "add_scalar") return V + " + " + lit("s");
  if (o == affine_op) return V + " * " + lit("a") + " + " + lit("b");
  if (o == "add") return V + " + " + side(g, op, running, idx);
  if (o == "sub") return V + " - " + side(g, op, running, idx);
  if (o == "mul") return V + " * " + side(g, op, running, idx);
  const std::string EM1 = fast ? "cru_fexpm1" : "expm1f";
  if (o == "elu") return V + " > 0.0f ? " + V + " : " + lit("alpha") + " * " + EM1 + V;
  if (o == "selu")
    return "1.0507009873554804934f * (" + V + " > 0.0f ? " + V + " : 1.6732632423543772848f * " + EM1 + V +
           ")";
  if (o == "hardswish") return V + " * fminf(fmaxf(" + V + " + 3.0f, 0.0f), 6.0f) / 6.0f";
  if (o == "hardsigmoid") return "fminf(fmaxf(" + V + " + 3.0f, 0.0f), 6.0f) / 6.0f";
  if (o == "softsign") return V + " / (1.0f + fabsf" + V + ")";
  if (o == "mish")
    return V + " * " + T + "(" + std::string(fast ? "cru_fsoftplus" : "cru_softplus") + V + ")";
  return "__error_unknown_elementwise_op_" + o;  // unreachable: chains are validated
}

std::string cuda_ew_statements(const cuda_group_ctx& g, int first, int last, const std::string& v,
                               const std::string& idx) {
  std::string out;
  for (int i = first; i <= last; ++i)
    out += v + " = " + cuda_elementwise_expr(g, g.chain.ops[i], v, idx, g.chain.before(i)) + ";\n";
  return out;
}

namespace {
std::set<int> side_inputs(const cuda_group_ctx& g, int first, int last) {
  std::set<int> used;
  for (int i = first; i <= last; ++i)
    if (is_elementwise(g.chain.ops[i]))
      for (const auto& a : g.chain.ops[i].args) used.insert(g.input_index(a));
  return used;
}
}  // namespace

std::string cuda_side_params(const cuda_group_ctx& g, int first, int last) {
  std::string out;
  for (int k : side_inputs(g, first, last)) out += ", const float* __restrict__ t" + std::to_string(k);
  return out;
}

std::string cuda_side_args(const cuda_group_ctx& g, int first, int last) {
  std::string out;
  for (int k : side_inputs(g, first, last)) out += ", X[" + std::to_string(k) + "]";
  return out;
}

bool cuda_uses_transcendental(const rewritten_chain& chain, int first, int last) {
  for (int i = first; i <= last; ++i)
    if (cuda_op_transcendental(chain.ops[i])) return true;
  return false;
}

const std::string& cuda_prelude() {
  static const std::string s = R"(#define CRU_FULL 0xffffffffu
__device__ __forceinline__ float cru_warp_sum(float v) {
for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(CRU_FULL, v, o);
return v;
}
__device__ __forceinline__ float cru_warp_max(float v) {
for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(CRU_FULL, v, o));
return v;
}
__device__ __forceinline__ float cru_warp_min(float v) {
for (int o = 16; o > 0; o >>= 1) v = fminf(v, __shfl_xor_sync(CRU_FULL, v, o));
return v;
}
// Block-wide reductions (blockDim.x a multiple of 32). The first barrier keeps a previous call's readers
// of sh ahead of this call's writers, so calls may follow each other directly.
#define CRU_BLOCK_REDUCE(NAME, WARP, INIT) \
__device__ __forceinline__ float NAME(float v, float* sh) { \
const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5; \
v = WARP(v); \
__syncthreads(); \
if (lane == 0) sh[w] = v; \
__syncthreads(); \
v = lane < nw ? sh[lane] : INIT; \
return WARP(v); \
}
CRU_BLOCK_REDUCE(cru_block_sum, cru_warp_sum, 0.0f)
CRU_BLOCK_REDUCE(cru_block_max, cru_warp_max, -INFINITY)
CRU_BLOCK_REDUCE(cru_block_min, cru_warp_min, INFINITY)
// (m, s): a running max and the sum of exp(x - m); an empty pair is (-inf, 0).
__device__ __forceinline__ void cru_online_merge(float& m, float& s, float m2, float s2) {
const float mx = fmaxf(m, m2);
if (mx == -INFINITY) return;
s = s * expf(m - mx) + s2 * expf(m2 - mx);
m = mx;
}
__device__ __forceinline__ void cru_warp_online(float& m, float& s) {
for (int o = 16; o > 0; o >>= 1) {
const float m2 = __shfl_xor_sync(CRU_FULL, m, o), s2 = __shfl_xor_sync(CRU_FULL, s, o);
cru_online_merge(m, s, m2, s2);
}
}
__device__ __forceinline__ void cru_block_online(float& m, float& s, float* sh) {
const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
cru_warp_online(m, s);
__syncthreads();
if (lane == 0) {
sh[w] = m;
sh[32 + w] = s;
}
__syncthreads();
m = lane < nw ? sh[lane] : -INFINITY;
s = lane < nw ? sh[32 + lane] : 0.0f;
cru_warp_online(m, s);
}
__device__ __forceinline__ float cru_fexp(float x) { return __expf(x); }
__device__ __forceinline__ float cru_fexpm1(float x) { return fabsf(x) < 1e-2f ? expm1f(x) : __expf(x) - 1.0f; }
__device__ __forceinline__ float cru_ftanh(float x) {
const float e = __expf(2.0f * fminf(fabsf(x), 9.0f));
return copysignf(1.0f - 2.0f / (e + 1.0f), x);
}
__device__ __forceinline__ float cru_softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }
__device__ __forceinline__ float cru_fsoftplus(float x) { return x > 20.0f ? x : __logf(1.0f + __expf(x)); }
)";
  return s;
}

}  // namespace crucible::kernels
