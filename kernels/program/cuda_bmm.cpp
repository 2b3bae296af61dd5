// BMM groups: bmm (v[B, M, K] @ W[B, K, N]) + elementwise epilogue.
//   cublas  cublasSgemmStridedBatched (row-major through the transposed-operand identity, FP32, no TF32),
//           then one in-place epilogue kernel when the group has an epilogue
//   tiled   the tiled SGEMM kernel (64 x 64 tiles) batched over blockIdx.z, the epilogue in its store
#include "kernels/program/cuda_groups.hpp"
#include "kernels/program/cuda_library.hpp"
#include "kernels/program/cuda_op_code.hpp"

namespace crucible::kernels {

cuda_group_code emit_cuda_bmm_group(const cuda_group_ctx& g) {
  const auto& p = g.plan;
  const chain_op& op = g.chain.ops[p.first];
  const shape_t& s = g.in_shape();
  const shape_t w = input_shape(g.task, op.args[0]);
  gemm_dims d;
  d.batch = s[0];
  d.M = s[1];
  d.K = s[2];
  d.N = w[2];
  d.stride_a = d.M * d.K;
  d.stride_b = d.K * d.N;
  d.stride_c = d.M * d.N;
  const std::string W = "X[" + std::to_string(g.input_index(op.args[0])) + "]";
  cuda_group_code out;
  std::string host = g.signature();
  if (p.strategy == "tiled") {
    out.code = cuda_tiled_gemm_kernel(g, g.fn + "_bmm", d, 64, p.first + 1, p.last);
    host += cuda_tiled_gemm_launch(g, g.fn + "_bmm", d, 64, p.first + 1, p.last, "in", W, "out");
  } else {
    out.uses_cublas = true;
    auto epi = cuda_epilogue(g, p.first + 1, p.last, "out", 256);
    out.code = epi.kernel;
    host += cuda_cublas_gemm(d, "in", W, "out") + epi.launch;
  }
  out.code += host + "return 0;\n}\n";
  return out;
}

}  // namespace crucible::kernels
