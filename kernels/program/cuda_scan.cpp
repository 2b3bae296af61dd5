// scan groups: an elementwise prologue, cumsum along the last dim (attrs reverse, exclusive), an elementwise
// epilogue.
//   block_scan  a block per row; the row goes by in chunks of blockDim.x elements: a warp-shuffle inclusive
//               scan per warp, the warp totals scanned by warp 0 in shared memory, and a running carry of
//               the chunk totals. Exclusive sums shift the warp scan by one lane (no subtraction, so no
//               cancellation). Reverse rows are scanned from their last element.
#include <algorithm>

#include "kernels/program/cuda_groups.hpp"
#include "kernels/program/cuda_op_code.hpp"

namespace crucible::kernels {
namespace {

std::string ll(int64_t x) {
  return std::to_string(x) + "LL";
}

}  // namespace

cuda_group_code emit_cuda_scan_group(const cuda_group_ctx& g) {
  const auto& p = g.plan;
  const int k = g.core();
  const chain_op& op = g.chain.ops[k];
  const shape_t& s = g.chain.before(k);
  const int64_t C = s.empty() ? 1 : s.back(), rows = numel(s) / std::max<int64_t>(C, 1);
  const bool reverse = attr_of(op, "reverse") != 0.0, exclusive = attr_of(op, "exclusive") != 0.0;
  // Enough threads for a short row in one chunk, up to 512 for long rows.
  const int threads = static_cast<int>(std::clamp<int64_t>((C + 31) / 32 * 32, 32, 512));
  const std::string side = cuda_side_params(g, p.first, p.last),
                    side_args = cuda_side_args(g, p.first, p.last);
  const std::string kern = g.fn + "_scan";
  std::string c;
  c += "__global__ void " + kern + "(const float* __restrict__ in, float* __restrict__ out" + side + ") {\n";
  c += "__shared__ float sh[32];\nconst int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n";
  c += "const int nw = blockDim.x >> 5;\n";
  c += "for (long long row = blockIdx.x; row < " + ll(rows) + "; row += gridDim.x) {\nfloat carry = 0.0f;\n";
  c += "for (long long c0 = 0; c0 < " + ll(C) + "; c0 += blockDim.x) {\n";
  c += "const long long q = c0 + threadIdx.x;\nconst bool ok = q < " + ll(C) + ";\n";
  c += "const long long idx = row * " + ll(C) + " + " + (reverse ? ll(C - 1) + " - q" : std::string("q")) +
       ";\n";
  c += "float x = 0.0f;\nif (ok) {\nfloat v = in[idx];\n" +
       cuda_ew_statements(g, p.first, k - 1, "v", "idx") + "x = v;\n}\n";
  c += "float sc = x;\nfor (int o = 1; o < 32; o <<= 1) {\nconst float y = __shfl_up_sync(0xffffffffu, sc, "
       "o);\n"
       "if (lane >= o) sc += y;\n}\n";
  if (exclusive) c += "float ex = __shfl_up_sync(0xffffffffu, sc, 1);\nif (lane == 0) ex = 0.0f;\n";
  c += "if (lane == 31) sh[warp] = sc;\n__syncthreads();\n";
  c += "if (warp == 0) {\nfloat w = lane < nw ? sh[lane] : 0.0f;\n"
       "for (int o = 1; o < 32; o <<= 1) {\nconst float y = __shfl_up_sync(0xffffffffu, w, o);\nif (lane >= "
       "o) w += "
       "y;\n}\nsh[lane] = w;\n}\n__syncthreads();\n";
  c += "const float before = warp > 0 ? sh[warp - 1] : 0.0f;\n";
  c += std::string("float v = carry + (before + ") + (exclusive ? "ex" : "sc") + ");\n";
  c += "if (ok) {\n" + cuda_ew_statements(g, k + 1, p.last, "v", "idx") + "out[idx] = v;\n}\n";
  c += "carry += sh[nw - 1];\n__syncthreads();\n}\n}\n}\n";

  c += g.signature() + "\n(void)X;\n(void)ws;\ncudaStream_t st = (cudaStream_t)ctx->stream;\n";
  c += kern + "<<<" + std::to_string(std::min<int64_t>(rows, 65535 * 16)) + ", " + std::to_string(threads) +
       ", 0, st>>>(in, out" + side_args + ");\n" + cuda_check_launch() + "return 0;\n}\n";
  return {c, 0, false, false};
}

}  // namespace crucible::kernels
