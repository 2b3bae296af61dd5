// GEMM groups: out[M, N] = in[M, K] x W[K, N], then the elementwise epilogue, applied to a block of the
// output while it is still in cache.
//   blas   cblas_sgemm (the BLAS the process has loaded; the prototype is declared in the emitted file),
//          block_rows = 0: one call, then the epilogue over the whole output; > 0: one call per block of
//          that many rows, each followed by its epilogue
//   tiled  W packed into 16-column panels (zero-padded), a 6x16 register-tiled micro-kernel (GCC vector
//          extensions: 12 accumulators of 8 floats), rows in blocks of `tile` (rounded down to a multiple of
//          6) so a block of A stays in L2 while each panel streams from L1; the epilogue runs on each 6x16
//          tile as it is stored
//   naive  row by row: out row = sum_k in[i, k] * W[k, :] (the i-k-j order), then the epilogue on the row
#include <algorithm>

#include "kernels/program/cpu_groups.hpp"
#include "kernels/program/cpu_loops.hpp"
#include "kernels/program/cpu_op_code.hpp"

namespace crucible::kernels {
namespace {

constexpr int mr = 6;   // micro-kernel rows
constexpr int nr = 16;  // micro-kernel columns (two vectors of 8)

}  // namespace

cpu_group_code emit_gemm_group(const cpu_group_ctx& g) {
  const auto& p = g.plan;
  const chain_op& mm = g.chain.ops[p.first];
  const int64_t K = g.in_shape().back(), N = g.out_shape().back(), M = numel(g.in_shape()) / K;
  const std::string Ks = std::to_string(K), Ns = std::to_string(N), Ms = std::to_string(M);
  const bool has_epi = p.last > p.first;
  cpu_group_code out;

  // The epilogue over row i, columns [j0, j0 + nj) of out: a helper, so each strategy applies it where
  // the data is hot.
  std::string code;
  const std::string epi_fn = g.fn + "_epi";
  if (has_epi) {
    ew_env env{"v", "i * " + Ns + " + j", "j", g.poly()};
    code += "static inline void " + epi_fn +
            "(const float* const* X, float* __restrict out, int64_t i, int64_t j0, int64_t nj) {\n" +
            side_input_decls(g.chain, g.task, p.first + 1, p.last) + "float* __restrict y = out + i * " + Ns +
            ";\n" +
            cpu_loop(true, 1, "j", "j0", "j0 + nj",
                     "float v = y[j];\n" + ew_statements(g.chain, g.task, p.first + 1, p.last, env) +
                         "y[j] = v;\n") +
            "}\n";
  }
  auto epi_rows = [&](const std::string& i0, const std::string& i1) {
    return has_epi ? "for (int64_t i = " + i0 + "; i < " + i1 + "; ++i) " + epi_fn + "(X, out, i, 0, " + Ns +
                         ");\n"
                   : std::string();
  };
  code += g.signature() + "  const float* __restrict w = X[" +
          std::to_string(input_index(g.task, mm.args[0])) + "];\n";

  if (p.strategy == "blas") {
    out.uses_blas = true;
    const int block = g.knob("block_rows");
    auto call = [&](const std::string& i0, const std::string& rows) {
      return "cblas_sgemm(101, 111, 111, (int)(" + rows + "), " + Ns + ", " + Ks + ", 1.0f, in + (" + i0 +
             ") * " + Ks + ", " + Ks + ", w, " + Ns + ", 0.0f, out + (" + i0 + ") * " + Ns + ", " + Ns +
             ");\n";
    };
    if (block <= 0 || block >= M) {
      code += call("0", Ms) + epi_rows("0", Ms);
    } else {
      code += "for (int64_t i0 = 0; i0 < " + Ms + "; i0 += " + std::to_string(block) +
              ") {\nconst int64_t i1 = i0 + " + std::to_string(block) + " < " + Ms + " ? i0 + " +
              std::to_string(block) + " : " + Ms + ";\n" + call("i0", "i1 - i0") + epi_rows("i0", "i1") +
              "}\n";
    }
  } else if (p.strategy == "naive") {
    code += "for (int64_t i = 0; i < " + Ms + "; ++i) {\nconst float* __restrict a = in + i * " + Ks +
            ";\nfloat* __restrict y = out + i * " + Ns + ";\nfor (int64_t j = 0; j < " + Ns +
            "; ++j) y[j] = 0.0f;\nfor (int64_t k = 0; k < " + Ks +
            "; ++k) {\nconst float ak = a[k];\nconst float* __restrict wk = w + k * " + Ns +
            ";\nfor (int64_t j = 0; j < " + Ns + "; ++j) y[j] += ak * wk[j];\n}\n" +
            (has_epi ? epi_fn + "(X, out, i, 0, " + Ns + ");\n" : "") + "}\n";
  } else {  // tiled
    out.uses_vector_types = true;
    const int64_t panels = (N + nr - 1) / nr;
    out.scratch_floats = panels * nr * K;
    // Row blocks are a multiple of the micro-kernel's rows, so only the last block has a 1-row tail.
    const std::string tile = std::to_string(std::max<int>(g.knob("tile") / mr * mr, mr));
    code += "float* __restrict wp = ws;\n";
    // Pack: panel q holds columns [16q, 16q + 16) as K rows of 16 (zero beyond N).
    code += "for (int64_t q = 0; q < " + std::to_string(panels) + "; ++q)\nfor (int64_t k = 0; k < " + Ks +
            "; ++k)\nfor (int64_t jj = 0; jj < 16; ++jj) {\nconst int64_t j = q * 16 + jj;\nwp[(q * " + Ks +
            " + k) * 16 + jj] = j < " + Ns + " ? w[k * " + Ns + " + j] : 0.0f;\n}\n";
    auto kernel = [&](int rows) {
      std::string s = "{\n";
      for (int r = 0; r < rows; ++r)
        s += "const float* __restrict a" + std::to_string(r) + " = in + (i + " + std::to_string(r) + ") * " +
             Ks + ";\n";
      for (int r = 0; r < rows; ++r)
        s += "cru_v8 c" + std::to_string(r) + "0 = {}, c" + std::to_string(r) + "1 = {};\n";
      s += "for (int64_t k = 0; k < " + Ks +
           "; ++k) {\nconst cru_v8 b0 = cru_ld8(bp + k * 16), b1 = cru_ld8(bp + k * 16 + 8);\n";
      for (int r = 0; r < rows; ++r) {
        const std::string rs = std::to_string(r);
        s += "{ const float ar = a" + rs + "[k]; c" + rs + "0 += ar * b0; c" + rs + "1 += ar * b1; }\n";
      }
      s += "}\n";
      for (int r = 0; r < rows; ++r) {
        const std::string rs = std::to_string(r);
        s += "{\nfloat* __restrict y = out + (i + " + rs + ") * " + Ns +
             " + j0;\nif (nj == 16) {\ncru_st8(y, c" + rs + "0);\ncru_st8(y + 8, c" + rs +
             "1);\n} else {\nfloat tmp[16];\ncru_st8(tmp, c" + rs + "0);\ncru_st8(tmp + 8, c" + rs +
             "1);\nfor (int64_t jj = 0; jj < nj; ++jj) y[jj] = tmp[jj];\n}\n";
        if (has_epi) s += epi_fn + "(X, out, i + " + rs + ", j0, nj);\n";
        s += "}\n";
      }
      return s + "}\n";
    };
    code += "for (int64_t i0 = 0; i0 < " + Ms + "; i0 += " + tile + ") {\nconst int64_t i1 = i0 + " + tile +
            " < " + Ms + " ? i0 + " + tile + " : " + Ms + ";\nfor (int64_t q = 0; q < " +
            std::to_string(panels) + "; ++q) {\nconst float* __restrict bp = wp + q * " + Ks +
            " * 16;\nconst int64_t j0 = q * 16;\nconst int64_t nj = " + Ns + " - j0 < 16 ? " + Ns +
            " - j0 : 16;\nint64_t i = i0;\nfor (; i + " + std::to_string(mr) +
            " <= i1; i += " + std::to_string(mr) + ")\n" + kernel(mr) + "for (; i < i1; ++i)\n" + kernel(1) +
            "}\n}\n";
  }
  out.code = code + "}\n";
  return out;
}

}  // namespace crucible::kernels
