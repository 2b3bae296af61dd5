// dim_reduce groups: an elementwise prologue, reduce_sum/mean/max/min over attrs.dim, an elementwise
// epilogue on the reduced tensor. The input is viewed as [outer, R, inner] and the output as [outer, inner].
//   direct  one thread per output element; neighbouring threads read neighbouring `inner` elements
//           (coalesced when inner > 1); R is summed in chunks of 64 so no float accumulator takes more than
//           64 + R/64 additions
//   block   a block per output: with inner == 1 the block's threads stride over the contiguous row and
//           reduce in shared memory; with inner > 1 a 32 x 8 block takes 32 neighbouring outputs
//           (coalesced) and its 8 rows of threads split R, combined in shared memory
#include <algorithm>

#include "kernels/program/cuda_groups.hpp"
#include "kernels/program/cuda_op_code.hpp"

namespace crucible::kernels {
namespace {

std::string ll(int64_t x) {
  return std::to_string(x) + "LL";
}

struct reduction {
  std::string init, combine_fn, fin;  // combine_fn(a, b) as a call prefix: "fmaxf" or "" for a + b
  std::string combine(const std::string& a, const std::string& b) const {
    return combine_fn.empty() ? a + " + " + b : combine_fn + "(" + a + ", " + b + ")";
  }
};

reduction reduction_of(const std::string& op, int64_t r) {
  if (op == "reduce_max") return {"-INFINITY", "fmaxf", "acc"};
  if (op == "reduce_min") return {"INFINITY", "fminf", "acc"};
  if (op == "reduce_mean") return {"0.0f", "", "acc / " + cuda_float(static_cast<double>(r))};
  return {"0.0f", "", "acc"};
}

}  // namespace

cuda_group_code emit_cuda_dim_reduce_group(const cuda_group_ctx& g) {
  const auto& p = g.plan;
  const int k = g.core();
  const chain_op& op = g.chain.ops[k];
  const shape_t& s = g.chain.before(k);
  const int rank = static_cast<int>(s.size());
  int d = static_cast<int>(attr_of(op, "dim"));
  if (d < 0) d += rank;
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < d; ++i) outer *= s[i];
  for (int i = d + 1; i < rank; ++i) inner *= s[i];
  const int64_t R = s[d], n_out = outer * inner;
  const reduction red = reduction_of(op.op, R);
  const std::string side = cuda_side_params(g, p.first, p.last),
                    side_args = cuda_side_args(g, p.first, p.last);
  const std::string pro = cuda_ew_statements(g, p.first, k - 1, "v", "xi");
  const std::string epi = cuda_ew_statements(g, k + 1, p.last, "v", "o");
  const std::string kern = g.fn + "_reduce";
  // One prologued element at row r of output (a, j) folded into `into`.
  auto fold = [&](const std::string& into) {
    return "{\nconst long long xi = (a * " + ll(R) + " + r) * " + ll(inner) + " + j;\nfloat v = in[xi];\n" +
           pro + into + " = " + red.combine(into, "v") + ";\n}\n";
  };
  // Per-thread accumulation over r = r0, r0 + step, ...: chunks of 64 steps into `part`, then into acc.
  auto accumulate = [&](const std::string& r0, const std::string& step, bool declare = true) {
    return (declare ? "float acc = " + red.init + ";\n" : std::string()) + "for (long long rc = " + r0 +
           "; rc < " + ll(R) + "; rc += 64LL * " + step + ") {\nfloat part = " + red.init +
           ";\nconst long long re = rc + 64LL * " + step + " < " + ll(R) + " ? rc + 64LL * " + step + " : " +
           ll(R) + ";\nfor (long long r = rc; r < re; r += " + step + ") " + fold("part") +
           "acc = " + red.combine("acc", "part") + ";\n}\n";
  };
  const std::string store = "float v = " + red.fin + ";\n" + epi + "out[o] = v;\n";
  std::string code;
  std::string launch;
  if (p.strategy == "block" && inner == 1) {
    const int threads = 256;
    code += "__global__ void " + kern + "(const float* __restrict__ in, float* __restrict__ out" + side +
            ") {\n__shared__ float sh[32];\nconst long long j = 0;\n";
    code +=
        "for (long long a = blockIdx.x; a < " + ll(outer) + "; a += gridDim.x) {\nconst long long o = a;\n";
    code += accumulate("(long long)threadIdx.x", "(long long)blockDim.x");
    const std::string bfn = red.combine_fn == "fmaxf"   ? "cru_block_max"
                            : red.combine_fn == "fminf" ? "cru_block_min"
                                                        : "cru_block_sum";
    code += "acc = " + bfn + "(acc, sh);\nif (threadIdx.x == 0) {\n" + store + "}\n}\n}\n";
    launch = kern + "<<<" + std::to_string(std::min<int64_t>(outer, 65535 * 16)) + ", " +
             std::to_string(threads) + ", 0, st>>>(in, out" + side_args + ");\n";
  } else if (p.strategy == "block") {
    // 32 outputs along inner per block (x), 8 rows of threads splitting R (y).
    const int64_t jt = (inner + 31) / 32, tiles = outer * jt;
    code += "__global__ void " + kern + "(const float* __restrict__ in, float* __restrict__ out" + side +
            ") {\n__shared__ float sh[8][33];\n";
    code += "for (long long tile = blockIdx.x; tile < " + ll(tiles) + "; tile += gridDim.x) {\n";
    code += "const long long a = tile / " + ll(jt) + ";\nconst long long j = (tile % " + ll(jt) +
            ") * 32 + threadIdx.x;\nconst long long o = a * " + ll(inner) + " + j;\n";
    code += "float acc = " + red.init + ";\nif (j < " + ll(inner) + ") {\n" +
            accumulate("(long long)threadIdx.y", "8LL", false) + "}\n";
    code += "sh[threadIdx.y][threadIdx.x] = acc;\n__syncthreads();\n";
    code += "for (int h = 4; h > 0; h >>= 1) {\nif (threadIdx.y < h) sh[threadIdx.y][threadIdx.x] = " +
            red.combine("sh[threadIdx.y][threadIdx.x]", "sh[threadIdx.y + h][threadIdx.x]") +
            ";\n__syncthreads();\n}\n";
    code += "if (threadIdx.y == 0 && j < " + ll(inner) + ") {\nacc = sh[0][threadIdx.x];\n" + store +
            "}\n__syncthreads();\n}\n}\n";
    launch = kern + "<<<" + std::to_string(std::min<int64_t>(tiles, 65535 * 16)) +
             ", dim3(32, 8), 0, st>>>(in, out" + side_args + ");\n";
  } else {  // direct
    const int threads = 256;
    code +=
        "__global__ void " + kern + "(const float* __restrict__ in, float* __restrict__ out" + side + ") {\n";
    code += "for (long long o = blockIdx.x * (long long)blockDim.x + threadIdx.x; o < " + ll(n_out) +
            "; o += (long long)gridDim.x * blockDim.x) {\n";
    code += "const long long a = o / " + ll(inner) + ", j = o - a * " + ll(inner) + ";\n";
    code += accumulate("0LL", "1LL") + store + "}\n}\n";
    launch = kern + "<<<" + std::to_string(cuda_blocks(n_out, threads)) + ", " + std::to_string(threads) +
             ", 0, st>>>(in, out" + side_args + ");\n";
  }
  code += g.signature() + "\n(void)X;\n(void)ws;\ncudaStream_t st = (cudaStream_t)ctx->stream;\n" + launch +
          cuda_check_launch() + "return 0;\n}\n";
  return {code, 0, false, false};
}

}  // namespace crucible::kernels
