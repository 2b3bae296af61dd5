// Row groups: an elementwise prologue, one row_reduce or row_norm over the last dim, an elementwise
// epilogue, in one kernel.
//   block   one block per row: strided passes over the row, shared-memory + warp-shuffle reductions
//   warp    one warp per row (threads/32 rows per block): shuffle reductions only; for short rows
//   online  one block per row; softmax/log_softmax: running max and rescaled sum in one pass (2 passes in
//           all); layer_norm: shifted sum and sum of squares in one pass (2 in all)
// Passes recompute the prologue from the input instead of materializing it, except in a block whose row
// fits its registers (at most 32 values a thread): softmax, log_softmax and the norms then read the row once
// (float4 loads when the row allows), keep the prologued values in registers for every pass and write it
// once, as a memory-bound kernel must. After a row_reduce the epilogue runs on the row's result (its [rows]
// element). Knobs: threads per block, math.
#include <algorithm>

#include "kernels/program/cuda_groups.hpp"
#include "kernels/program/cuda_library.hpp"
#include "kernels/program/cuda_op_code.hpp"

namespace crucible::kernels {

cuda_group_code emit_cuda_row_group(const cuda_group_ctx& g) {
  const auto& p = g.plan;
  const int k = g.core();
  const chain_op& op = g.chain.ops[k];
  const int64_t cols = g.in_shape().back(), rows = numel(g.in_shape()) / cols;
  const std::string C = std::to_string(cols), R = std::to_string(rows);
  const std::string I = cuda_index_type(numel(g.in_shape()));
  const bool warp = p.strategy == "warp", online = p.strategy == "online";
  int threads = g.knob("threads") > 0 ? g.knob("threads") : 256;
  // A block per row never needs more threads than the row has elements (rounded up to a warp): short rows
  // would otherwise leave most of each block idle.
  if (!warp) threads = static_cast<int>(std::min<int64_t>(threads, (cols + 31) / 32 * 32));
  const bool fast = g.fast_math();
  const std::string EXP = fast ? "__expf" : "expf", LOG = fast ? "__logf" : "logf";
  auto rsqrt = [&](const std::string& a) { return fast ? "rsqrtf(" + a + ")" : "(1.0f / sqrtf(" + a + "))"; };
  auto red = [&](const char* what, const std::string& v) {
    return warp ? "cru_warp_" + std::string(what) + "(" + v + ")"
                : "cru_block_" + std::string(what) + "(" + v + ", sh)";
  };
  const std::string loop = warp ? "for (int c = lane; c < " + C + "; c += 32) {\n"
                                : "for (int c = threadIdx.x; c < " + C + "; c += blockDim.x) {\n";
  const std::string P =
      "float v = x[c];\n" + cuda_ew_statements(g, p.first, k - 1, "v", "base + c");  // prologued element

  // The row op's own operands (layer_norm/rms_norm weight and bias) as w_, b_.
  std::string params = "(const float* __restrict__ in, float* __restrict__ out", args = "(in, out";
  const char* own[] = {"w_", "b_"};
  for (size_t a = 0; a < op.args.size() && a < 2; ++a) {
    params += std::string(", const float* __restrict__ ") + own[a];
    args += ", X[" + std::to_string(g.input_index(op.args[a])) + "]";
  }
  params += cuda_side_params(g, p.first, p.last) + ")";
  args += cuda_side_args(g, p.first, p.last) + ")";

  std::string s = "__global__ void __launch_bounds__(" + std::to_string(threads) + ") " + g.fn + "_row" +
                  params + " {\n__shared__ float sh[64];\n(void)sh;\n";
  if (warp) {
    s += "const int lane = threadIdx.x & 31;\nconst " + I + " r = blockIdx.x * (" + I +
         ")(blockDim.x >> 5) + (threadIdx.x >> 5);\nif (r >= " + R + ") return;\n";
  } else {
    s += "const " + I + " r = blockIdx.x;\n";
  }
  s += "const " + I + " base = r * " + C + ";\nconst float* __restrict__ x = in + base;\n";
  const std::string lead = warp ? "lane == 0" : "threadIdx.x == 0";

  // Values a thread holds when the row is cached in registers (block strategy only).
  const bool vec = cols % 4 == 0;
  const int64_t per = vec ? (cols / 4 + threads - 1) / threads * 4 : (cols + threads - 1) / threads;
  const bool cached = !warp && !online && kind_of(op) != chain_op_kind::row_reduce && per <= 32;

  if (cached) {
    // vals[i * W + j]: element c = (threadIdx.x + i * T) * W + j of the row, W = 4 with float4 access.
    const int W = vec ? 4 : 1;
    const std::string T = std::to_string(threads), NI = std::to_string(per / W), Wn = std::to_string(W);
    const std::string units = std::to_string(cols / W);
    const std::string head = "#pragma unroll\nfor (int i = 0; i < " + NI +
                             "; ++i) {\nconst int u = threadIdx.x + i * " + T + ";\nif (u < " + units +
                             ") {\n";
    const std::string inner = "#pragma unroll\nfor (int j = 0; j < " + Wn + "; ++j) {\nconst int c = u * " +
                              Wn + " + j;\n(void)c;\n";
    auto each = [&](const std::string& body) {  // body sees c and e = vals[i * W + j]
      return head + inner + "float& e = vals[i * " + Wn + " + j];\n" + body + "}\n}\n}\n";
    };
    s += "float vals[" + std::to_string(per) + "];\n";
    if (vec)  // rows are 16-byte aligned when the tensors are; scalar accesses otherwise (a uniform branch)
      s += "const bool al = ((reinterpret_cast<unsigned long long>(x) | reinterpret_cast<unsigned long "
           "long>(out + "
           "base)) & 15ull) == 0;\n";
    // Load (and prologue) once.
    s += head;
    if (vec)
      s += "float ld[4];\nif (al) {\nconst float4 q = reinterpret_cast<const float4*>(x)[u];\nld[0] = q.x;\n"
           "ld[1] = q.y;\nld[2] = q.z;\nld[3] = q.w;\n} else {\nfor (int j = 0; j < 4; ++j) ld[j] = x[u * 4 "
           "+ j];\n}\n";
    else
      s += "const float ld[1] = {x[u]};\n";
    s += inner + "float v = ld[j];\n" + cuda_ew_statements(g, p.first, k - 1, "v", "base + c") + "vals[i * " +
         Wn + " + j] = v;\n}\n}\n}\n";
    // The final pass: f(e) -> v, the epilogue, one store (float4 when vectorized and aligned).
    auto store = [&](const std::string& f) {
      std::string b = head + "float o[" + Wn + "];\n" + inner + "const float e = vals[i * " + Wn +
                      " + j];\nfloat v = " + f + ";\n" +
                      cuda_ew_statements(g, k + 1, p.last, "v", "base + c") + "o[j] = v;\n}\n";
      b += vec ? "if (al) {\nreinterpret_cast<float4*>(out + base)[u] = make_float4(o[0], o[1], o[2], "
                 "o[3]);\n} else "
                 "{\nfor (int j = 0; j < 4; ++j) out[base + u * 4 + j] = o[j];\n}\n"
               : "out[base + u] = o[0];\n";
      return b + "}\n}\n";
    };
    const std::string eps = cuda_float(attr_of(op, "eps"));
    if (op.op == "softmax" || op.op == "log_softmax") {
      s += "float mx = -INFINITY;\n" + each("mx = fmaxf(mx, e);\n") + "mx = " + red("max", "mx") + ";\n";
      if (op.op == "softmax") {
        s += "float sm = 0.0f;\n" + each("e = " + EXP + "(e - mx);\nsm += e;\n") +
             "sm = " + red("sum", "sm") + ";\nconst float inv = 1.0f / sm;\n";
        s += store("e * inv");
      } else {
        s += "float sm = 0.0f;\n" + each("sm += " + EXP + "(e - mx);\n") + "sm = " + red("sum", "sm") +
             ";\nconst float lse = mx + " + LOG + "(sm);\n";
        s += store("e - lse");
      }
    } else if (op.op == "layer_norm") {
      std::string aff = op.args.size() > 0 ? " * w_[c]" : "";
      if (op.args.size() > 1) aff += " + b_[c]";
      // Two exact passes over the registers: the mean, then the mean squared deviation.
      s += "float sa = 0.0f;\n" + each("sa += e;\n") + "const float mean = " + red("sum", "sa") + " / " +
           cuda_float(cols) + ";\n";
      s += "float sq = 0.0f;\n" + each("const float d = e - mean;\nsq += d * d;\n") +
           "const float rstd = " + rsqrt(red("sum", "sq") + " / " + cuda_float(cols) + " + " + eps) + ";\n";
      s += store("(e - mean) * rstd" + aff);
    } else {  // rms_norm
      const std::string aff = op.args.empty() ? "" : " * w_[c]";
      s += "float sq = 0.0f;\n" + each("sq += e * e;\n") +
           "const float rstd = " + rsqrt(red("sum", "sq") + " / " + cuda_float(cols) + " + " + eps) + ";\n";
      s += store("e * rstd" + aff);
    }
    s += "}\n";
  } else if (kind_of(op) == chain_op_kind::row_reduce) {
    const bool max = op.op == "row_max";
    s += std::string("float acc = ") + (max ? "-INFINITY" : "0.0f") + ";\n" + loop + P +
         (max ? "acc = fmaxf(acc, v);\n}\n" : "acc += v;\n}\n");
    s += "acc = " + red(max ? "max" : "sum", "acc") + ";\n";
    s += "if (" + lead + ") {\nfloat v = acc" + (op.op == "row_mean" ? " / " + cuda_float(cols) : "") +
         ";\n" + cuda_ew_statements(g, k + 1, p.last, "v", "r") + "out[r] = v;\n}\n}\n";
  } else {
    const std::string store =
        cuda_ew_statements(g, k + 1, p.last, "v", "base + c") + "out[base + c] = v;\n}\n";
    const std::string eps = cuda_float(attr_of(op, "eps"));
    if (op.op == "softmax" || op.op == "log_softmax") {
      if (online) {
        // Per thread: max m and sum s of exp(v - m); one exp per element either way.
        s += "float m = -INFINITY, sm = 0.0f;\n" + loop + P + "if (v > m) {\nsm = sm * " + EXP +
             "(m - v) + 1.0f;\nm = v;\n} else if (v != -INFINITY) {\nsm += " + EXP + "(v - m);\n}\n}\n";
        s += "cru_block_online(m, sm, sh);\nconst float mx = m;\n";
      } else {
        s += "float mx = -INFINITY;\n" + loop + P + "mx = fmaxf(mx, v);\n}\nmx = " + red("max", "mx") + ";\n";
        s += "float sm = 0.0f;\n" + loop + P + "sm += " + EXP + "(v - mx);\n}\nsm = " + red("sum", "sm") +
             ";\n";
      }
      if (op.op == "softmax")
        s += "const float inv = 1.0f / sm;\n" + loop + P + "v = " + EXP + "(v - mx) * inv;\n" + store;
      else
        s += "const float lse = mx + " + LOG + "(sm);\n" + loop + P + "v = v - lse;\n" + store;
    } else if (op.op == "layer_norm") {
      std::string aff = op.args.size() > 0 ? " * w_[c]" : "";
      if (op.args.size() > 1) aff += " + b_[c]";
      if (online) {
        // Sums shifted by the row's first element: no cancellation when the mean is far from 0.
        s += "float sh0;\n{\nconst int c = 0;\n" + P + "sh0 = v;\n}\n";
        s += "float sa = 0.0f, sq = 0.0f;\n" + loop + P + "v -= sh0;\nsa += v;\nsq += v * v;\n}\n";
        s += "sa = " + red("sum", "sa") + ";\nsq = " + red("sum", "sq") + ";\n";
        s += "const float dm = sa / " + cuda_float(cols) +
             ", mean = sh0 + dm;\nconst float var = fmaxf(sq / " + cuda_float(cols) + " - dm * dm, 0.0f);\n";
      } else {
        s += "float sa = 0.0f;\n" + loop + P + "sa += v;\n}\nconst float mean = " + red("sum", "sa") + " / " +
             cuda_float(cols) + ";\n";
        s += "float sq = 0.0f;\n" + loop + P +
             "v -= mean;\nsq += v * v;\n}\nconst float var = " + red("sum", "sq") + " / " + cuda_float(cols) +
             ";\n";
      }
      s += "const float rstd = " + rsqrt("var + " + eps) + ";\n";
      s += loop + P + "v = (v - mean) * rstd" + aff + ";\n" + store;
    } else {  // rms_norm
      const std::string aff = op.args.empty() ? "" : " * w_[c]";
      s += "float sq = 0.0f;\n" + loop + P + "sq += v * v;\n}\n";
      s += "const float rstd = " + rsqrt(red("sum", "sq") + " / " + cuda_float(cols) + " + " + eps) + ";\n";
      s += loop + P + "v = v * rstd" + aff + ";\n" + store;
    }
    s += "}\n";
  }
  const int64_t blocks = warp ? (rows + threads / 32 - 1) / (threads / 32) : rows;
  std::string host = g.signature() + g.fn + "_row<<<" + std::to_string(blocks) + ", " +
                     std::to_string(threads) + ", 0, (cudaStream_t)ctx->stream>>>" + args + ";\n" +
                     cuda_check_launch() + "return 0;\n}\n";
  cuda_group_code out;
  out.code = s + host;
  return out;
}

}  // namespace crucible::kernels
