// loss groups: an elementwise prologue on v, then mse_loss / huber_loss / kl_div (a term per element) or
// cross_entropy / cosine_loss (a term per row of the last dim), summed and scaled to the 0-dim output; an
// epilogue, if any, runs on that scalar.
//   two_stage  B blocks (fixed at emission) each write their partial sum to scratch; one block then sums
//              the B partials in a fixed tree: deterministic
//   atomic     the output is zeroed on the stream, and every block atomically adds its scaled partial
// Per-row terms: a warp per row for rows of up to 1024 elements, else a block per row. cross_entropy is
// sum_c t_c (lse - v_c): every term is >= 0, so nothing cancels (unlike lse * sum t - sum t v).
#include <algorithm>

#include "kernels/program/cuda_groups.hpp"
#include "kernels/program/cuda_op_code.hpp"

namespace crucible::kernels {
namespace {

std::string ll(int64_t x) {
  return std::to_string(x) + "LL";
}

}  // namespace

cuda_group_code emit_cuda_loss_group(const cuda_group_ctx& g) {
  const auto& p = g.plan;
  const int k = g.core();
  const chain_op& op = g.chain.ops[k];
  const shape_t& s = g.chain.before(k);
  const int64_t n = numel(s);
  const bool fast = g.fast_math();
  const std::string EXP = fast ? "__expf" : "expf", LOG = fast ? "__logf" : "logf";
  const std::string side = cuda_side_params(g, p.first, p.last),
                    side_args = cuda_side_args(g, p.first, p.last);
  const std::string pro = cuda_ew_statements(g, p.first, k - 1, "v", "i");
  const std::string epi = cuda_ew_statements(g, k + 1, p.last, "v", "0");
  const bool atomic = p.strategy == "atomic";
  const int threads = 256;
  // The prologued v and the target t at flat index i.
  const std::string load_v = "float v = in[i];\n" + pro, load = load_v + "const float t = t_[i];\n";
  const bool rowwise = op.op == "cross_entropy" || op.op == "cosine_loss";
  const int64_t C = s.empty() ? 1 : s.back(), rows = n / std::max<int64_t>(C, 1);
  double divisor = static_cast<double>(n);
  if (rowwise) divisor = static_cast<double>(rows);
  if (op.op == "kl_div") divisor = static_cast<double>(s.empty() ? 1 : s[0]);
  const std::string div = cuda_float(divisor);

  std::string c = "__global__ void " + g.fn +
                  "_loss(const float* __restrict__ in, const float* __restrict__ t_, " +
                  "float* __restrict__ dst" + side + ") {\n__shared__ float sh[32];\nfloat acc = 0.0f;\n";
  int64_t blocks;
  if (!rowwise) {
    std::string term;
    if (op.op == "mse_loss") {
      term = "const float d = v - t;\nacc += d * d;\n";
    } else if (op.op == "huber_loss") {
      const std::string delta = cuda_float(attr_of(op, "delta"));
      term = "const float d = v - t, a = fabsf(d);\nacc += a < " + delta + " ? 0.5f * d * d : " + delta +
             " * (a - 0.5f * " + delta + ");\n";
    } else {  // kl_div: xlogy(t, t) - t * v
      term = "const float lt = t * " + LOG + "(t);\nacc += (t > 0.0f ? lt : 0.0f) - t * v;\n";
    }
    blocks = std::min<int64_t>(cuda_blocks(n, threads), 1024);
    c += "for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < " + ll(n) +
         "; i += (long long)gridDim.x * blockDim.x) {\n" + load + term + "}\n";
  } else {
    const bool warp = C <= 1024;
    const std::string SUM = warp ? "cru_warp_sum(" : "cru_block_sum(",
                      MAX = warp ? "cru_warp_max(" : "cru_block_max(";
    const std::string end = warp ? ")" : ", sh)";
    if (warp) {
      blocks = std::min<int64_t>((rows + 7) / 8, 1024);
      c += "const int lane = threadIdx.x & 31;\nconst long long w0 = (blockIdx.x * (long long)blockDim.x + "
           "threadIdx.x) >> 5;\nconst long long nw = ((long long)gridDim.x * blockDim.x) >> 5;\n";
      c += "for (long long row = w0; row < " + ll(rows) + "; row += nw) {\n";
    } else {
      blocks = std::min<int64_t>(rows, 1024);
      c += "const int lane = threadIdx.x;\n";
      c += "for (long long row = blockIdx.x; row < " + ll(rows) + "; row += gridDim.x) {\n";
    }
    const std::string W = warp ? "32" : "blockDim.x";
    const std::string head = "for (long long cc = lane; cc < " + ll(C) + "; cc += " + W +
                             ") {\nconst long long i = row * " + ll(C) + " + cc;\n";
    const std::string loop = head + load, loop_v = head + load_v;
    if (op.op == "cross_entropy") {
      c += "float m = -INFINITY, se = 0.0f;\n" + loop_v + "if (v > m) {\nse = se * " + EXP +
           "(m - v) + 1.0f;\nm = v;\n} else {\nse += " + EXP + "(v - m);\n}\n}\n";
      c += warp ? "cru_warp_online(m, se);\n" : "__shared__ float sh2[64];\ncru_block_online(m, se, sh2);\n";
      c += "const float lse = m + " + LOG + "(se);\nfloat r = 0.0f;\n" + loop + "r += t * (lse - v);\n}\n";
      c += "r = " + SUM + "r" + end + ";\n";
    } else {  // cosine_loss: 1 - v.t / (max(|v|, eps) max(|t|, eps))
      c +=
          "float dt = 0.0f, vv = 0.0f, tt = 0.0f;\n" + loop + "dt += v * t;\nvv += v * v;\ntt += t * t;\n}\n";
      c += "dt = " + SUM + "dt" + end + ";\nvv = " + SUM + "vv" + end + ";\ntt = " + SUM + "tt" + end + ";\n";
      c += "const float r = 1.0f - dt / (fmaxf(sqrtf(vv), 1e-8f) * fmaxf(sqrtf(tt), 1e-8f));\n";
    }
    c += "if (lane == 0) acc += r;\n}\n";
    (void)MAX;
  }
  c += "acc = cru_block_sum(acc, sh);\n";
  if (atomic)
    c += "if (threadIdx.x == 0) atomicAdd(dst, acc / " + div + ");\n}\n";
  else
    c += "if (threadIdx.x == 0) dst[blockIdx.x] = acc;\n}\n";

  const std::string t_arg = "X[" + std::to_string(g.input_index(op.args[0])) + "]";
  std::string host = g.signature() + "\n(void)X;\n(void)ws;\ncudaStream_t st = (cudaStream_t)ctx->stream;\n";
  cuda_group_code out;
  if (atomic) {
    host += "if (cudaMemsetAsync(out, 0, sizeof(float), st) != cudaSuccess) return 5;\n";
    host += g.fn + "_loss<<<" + std::to_string(blocks) + ", " + std::to_string(threads) + ", 0, st>>>(in, " +
            t_arg + ", out" + side_args + ");\n" + cuda_check_launch();
    if (!epi.empty()) {
      c += "__global__ void " + g.fn + "_epi(float* __restrict__ out" + side + ") {\nfloat v = out[0];\n" +
           epi + "out[0] = v;\n}\n";
      host += g.fn + "_epi<<<1, 1, 0, st>>>(out" + side_args + ");\n" + cuda_check_launch();
    }
  } else {
    out.scratch_floats = blocks;
    c += "__global__ void " + g.fn + "_final(const float* __restrict__ part, float* __restrict__ out" + side +
         ") {\n__shared__ float sh[32];\nfloat acc = 0.0f;\nfor (int j = threadIdx.x; j < " +
         std::to_string(blocks) +
         "; j += blockDim.x) acc += part[j];\nacc = cru_block_sum(acc, sh);\nif (threadIdx.x == 0) {\nfloat "
         "v = acc / " +
         div + ";\n" + epi + "out[0] = v;\n}\n}\n";
    host += g.fn + "_loss<<<" + std::to_string(blocks) + ", " + std::to_string(threads) + ", 0, st>>>(in, " +
            t_arg + ", ws" + side_args + ");\n" + cuda_check_launch();
    host += g.fn + "_final<<<1, 256, 0, st>>>(ws, out" + side_args + ");\n" + cuda_check_launch();
  }
  out.code = c + host + "return 0;\n}\n";
  return out;
}

}  // namespace crucible::kernels
