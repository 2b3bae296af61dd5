// GEMM groups: matmul (v[.., K] @ W[K, N], leading dims flattened into M rows) + elementwise epilogue.
//   cublas  cublasSgemm (row-major through the transposed-operand identity, FP32, no TF32), then one
//           in-place epilogue kernel over the output when the group has an epilogue (the eager shape)
//   tiled   a shared-memory tiled SGEMM (tile x tile per block, register blocking) with the epilogue
//           applied in its store; knob tile {64, 32}
// GEMV groups (the gemm_rowsum_to_gemv rewrite): out[r] = (x[r,:] . u + csum) (/N for a mean) with
// u = W a and the column maps a_j z + c_j of the linear ops: u (K floats) and csum go to scratch, computed
// from the inputs on every call (a warp per row of W), then one dot per row with the epilogue.
//   warp_dot   a warp per row          block_dot  a block of 256 threads per row
#include <algorithm>

#include "kernels/program/cuda_groups.hpp"
#include "kernels/program/cuda_library.hpp"
#include "kernels/program/cuda_op_code.hpp"
#include "kernels/task/op_catalog.hpp"

namespace crucible::kernels {

cuda_group_code emit_cuda_gemm_group(const cuda_group_ctx& g) {
  const auto& p = g.plan;
  const chain_op& op = g.chain.ops[p.first];
  gemm_dims d;
  d.K = g.in_shape().back();
  d.M = numel(g.in_shape()) / d.K;
  d.N = input_shape(g.task, op.args[0]).back();
  const std::string W = "X[" + std::to_string(g.input_index(op.args[0])) + "]";
  cuda_group_code out;
  std::string host = g.signature();
  if (p.strategy == "tiled") {
    const int tile = g.knob("tile") == 32 ? 32 : 64;
    out.code = cuda_tiled_gemm_kernel(g, g.fn + "_gemm", d, tile, p.first + 1, p.last);
    host += cuda_tiled_gemm_launch(g, g.fn + "_gemm", d, tile, p.first + 1, p.last, "in", W, "out");
  } else {
    out.uses_cublas = true;
    auto epi = cuda_epilogue(g, p.first + 1, p.last, "out", 256);
    out.code = epi.kernel;
    host += cuda_cublas_gemm(d, "in", W, "out") + epi.launch;
  }
  out.code += host + "return 0;\n}\n";
  return out;
}

cuda_group_code emit_cuda_gemv_group(const cuda_group_ctx& g) {
  const auto& p = g.plan;
  const chain_op& op = g.chain.ops[p.first];
  const int64_t K = g.in_shape().back(), M = numel(g.in_shape()) / K;
  const int64_t N = input_shape(g.task, op.args[0]).back();
  const std::string Ks = std::to_string(K), Ns = std::to_string(N), Ms = std::to_string(M);
  const std::string I = cuda_index_type(std::max(numel(g.in_shape()), K * N));

  // Column j's affine map a_j z + c_j, composed from the linear ops in order; their row-vector operands
  // are parameters l<k>.
  std::string lin, lparams, largs;
  std::vector<int> seen;
  for (const auto& l : op.linear) {
    std::string arg;
    if (!l.args.empty()) {
      const int k = g.input_index(l.args[0]);
      arg = "l" + std::to_string(k) + "[j]";
      if (std::find(seen.begin(), seen.end(), k) == seen.end()) {
        seen.push_back(k);
        lparams += ", const float* __restrict__ l" + std::to_string(k);
        largs += ", X[" + std::to_string(k) + "]";
      }
    }
    auto s = [&](const char* name) { return cuda_float(op_attr(l, name)); };
    if (l.op == "add")
      lin += "cj += " + arg + ";\n";
    else if (l.op == "sub")
      lin += "cj -= " + arg + ";\n";
    else if (l.op == "mul")
      lin += "aj *= " + arg + ";\ncj *= " + arg + ";\n";
    else if (l.op == "mul_scalar")
      lin += "aj *= " + s("s") + ";\ncj *= " + s("s") + ";\n";
    else if (l.op == "add_scalar")
      lin += "cj += " + s("s") + ";\n";
    else {  // _affine
      const std::string a = cuda_float(l.attrs.count("a") ? l.attrs.at("a") : 1.0);
      const std::string b = cuda_float(l.attrs.count("b") ? l.attrs.at("b") : 0.0);
      lin += "aj *= " + a + ";\ncj = cj * " + a + " + " + b + ";\n";
    }
  }
  const std::string colmap = "float aj = 1.0f, cj = 0.0f;\n" + lin;

  // u[k] = sum_j W[k, j] a_j: a warp per k. The last block's first warp also sums c_j into u[K].
  std::string s = "__global__ void __launch_bounds__(256) " + g.fn +
                  "_u(const float* __restrict__ w, float* __restrict__ u" + lparams + ") {\n";
  s += "const int lane = threadIdx.x & 31;\nconst " + I + " k = blockIdx.x * (" + I +
       ")8 + (threadIdx.x >> 5);\n";
  s += "if (k < " + Ks + ") {\nfloat acc = 0.0f;\nfor (int j = lane; j < " + Ns + "; j += 32) {\n" + colmap +
       "acc = fmaf(w[k * " + Ns +
       " + j], aj, acc);\n}\nacc = cru_warp_sum(acc);\nif (lane == 0) u[k] = acc;\n}\n";
  s += "if (k == " + Ks + ") {\nfloat acc = 0.0f;\nfor (int j = lane; j < " + Ns + "; j += 32) {\n" + colmap +
       "acc += cj;\n}\nacc = cru_warp_sum(acc);\nif (lane == 0) u[" + Ks + "] = acc;\n}\n}\n";

  const bool block = p.strategy == "block_dot";
  const std::string fin = attr_of(op, "mean") != 0 ? " / " + cuda_float(N) : "";
  s += "__global__ void __launch_bounds__(256) " + g.fn +
       "_dot(const float* __restrict__ in, const float* __restrict__ u, float* __restrict__ out" +
       cuda_side_params(g, p.first + 1, p.last) + ") {\n";
  if (block) {
    s += "__shared__ float sh[32];\nconst " + I + " r = blockIdx.x;\nfloat acc = 0.0f;\n";
    s += "for (int k = threadIdx.x; k < " + Ks + "; k += blockDim.x) acc = fmaf(in[r * " + Ks +
         " + k], u[k], acc);\nacc = cru_block_sum(acc, sh);\nif (threadIdx.x == 0) {\n";
  } else {
    s += "const int lane = threadIdx.x & 31;\nconst " + I + " r = blockIdx.x * (" + I +
         ")8 + (threadIdx.x >> 5);\nif (r >= " + Ms + ") return;\nfloat acc = 0.0f;\n";
    s += "for (int k = lane; k < " + Ks + "; k += 32) acc = fmaf(in[r * " + Ks +
         " + k], u[k], acc);\nacc = cru_warp_sum(acc);\nif (lane == 0) {\n";
  }
  s += "float v = (acc + u[" + Ks + "])" + fin + ";\n" +
       cuda_ew_statements(g, p.first + 1, p.last, "v", "r") + "out[r] = v;\n}\n}\n";

  const std::string W = "X[" + std::to_string(g.input_index(op.args[0])) + "]";
  std::string host = g.signature();
  host += g.fn + "_u<<<" + std::to_string(K / 8 + 1) + ", 256, 0, (cudaStream_t)ctx->stream>>>(" + W +
          ", ws" + largs + ");\n" + cuda_check_launch();
  host += g.fn + "_dot<<<" + std::to_string(block ? M : (M + 7) / 8) +
          ", 256, 0, (cudaStream_t)ctx->stream>>>(in, ws, out" + cuda_side_args(g, p.first + 1, p.last) +
          ");\n" + cuda_check_launch() + "return 0;\n}\n";
  cuda_group_code out;
  out.code = s + host;
  out.scratch_floats = K + 1;
  return out;
}

}  // namespace crucible::kernels
