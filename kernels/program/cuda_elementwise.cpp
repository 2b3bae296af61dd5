// Elementwise groups: one kernel applying every op of the group per element, grid-stride over the tensor.
//   grid  one float per thread per iteration
//   vec4  float4 loads and stores (16-byte aligned in/out; otherwise the grid kernel runs), a scalar tail
// Knobs: threads per block; math.
#include "kernels/program/cuda_groups.hpp"
#include "kernels/program/cuda_library.hpp"
#include "kernels/program/cuda_op_code.hpp"

namespace crucible::kernels {

cuda_group_code emit_cuda_elementwise_group(const cuda_group_ctx& g) {
  const auto& p = g.plan;
  const int64_t n = numel(g.in_shape());
  const int threads = g.knob("threads") > 0 ? g.knob("threads") : 256;
  const std::string I = cuda_index_type(n), N = std::to_string(n), TH = std::to_string(threads);
  const std::string params =
      "(const float* __restrict__ x, float* __restrict__ y" + cuda_side_params(g, p.first, p.last) + ")";
  const std::string args = cuda_side_args(g, p.first, p.last);
  const std::string body = cuda_ew_statements(g, p.first, p.last, "v", "i");
  const std::string launch_cfg = ", " + TH + ", 0, (cudaStream_t)ctx->stream>>>";
  auto loop = [&](const std::string& from, const std::string& to) {
    return "for (" + I + " i = " + from + " + blockIdx.x * (" + I + ")blockDim.x + threadIdx.x; i < " + to +
           "; i += (" + I + ")gridDim.x * blockDim.x) {\nfloat v = x[i];\n" + body + "y[i] = v;\n}\n";
  };
  std::string code =
      "__global__ void __launch_bounds__(" + TH + ") " + g.fn + "_k" + params + " {\n" + loop("0", N) + "}\n";
  std::string host = g.signature();
  const std::string scalar_launch =
      g.fn + "_k<<<" + std::to_string(cuda_blocks(n, threads)) + launch_cfg + "(in, out" + args + ");\n";
  if (p.strategy == "vec4" && n >= 4) {
    const int64_t n4 = n / 4;
    std::string k = "__global__ void __launch_bounds__(" + TH + ") " + g.fn + "_v" + params + " {\n";
    k += "for (" + I + " q = blockIdx.x * (" + I + ")blockDim.x + threadIdx.x; q < " + std::to_string(n4) +
         "; q += (" + I + ")gridDim.x * blockDim.x) {\n";
    k += "float4 w = reinterpret_cast<const float4*>(x)[q];\nfloat e[4] = {w.x, w.y, w.z, w.w};\n";
    k += "#pragma unroll\nfor (int j = 0; j < 4; ++j) {\nconst " + I + " i = q * 4 + j;\nfloat v = e[j];\n" +
         body + "e[j] = v;\n}\n";
    k += "reinterpret_cast<float4*>(y)[q] = make_float4(e[0], e[1], e[2], e[3]);\n}\n";
    // The scalar tail: the last n % 4 elements, by the first threads of block 0.
    if (n % 4)
      k += "if (blockIdx.x == 0 && threadIdx.x < " + std::to_string(n % 4) + ") {\nconst " + I +
           " i = " + std::to_string(n4 * 4) + " + threadIdx.x;\nfloat v = x[i];\n" + body + "y[i] = v;\n}\n";
    code += k + "}\n";
    host += "if (((uintptr_t)in | (uintptr_t)out) & 15) {\n" + scalar_launch + "} else {\n" + g.fn + "_v<<<" +
            std::to_string(cuda_blocks(n4, threads)) + launch_cfg + "(in, out" + args + ");\n}\n";
  } else {
    host += scalar_launch;
  }
  host += cuda_check_launch() + "return 0;\n}\n";
  cuda_group_code out;
  out.code = code + host;
  return out;
}

}  // namespace crucible::kernels
