// pool groups: max/avg pooling (2d, 3d) or global average pooling, then an elementwise epilogue.
//   direct  windowed pools: one thread per output element looping over its window (padding never wins a
//           max; an average divides by the full window, as torch's count_include_pad); 2d pools are 3d
//           pools with a depth of 1. global_avg_pool: a warp per (n, c) plane for short planes, a block per
//           plane for long ones, tree-summed.
// Knobs: threads (block size), math (epilogue).
#include <algorithm>

#include "kernels/program/cuda_groups.hpp"
#include "kernels/program/cuda_op_code.hpp"

namespace crucible::kernels {
namespace {

std::string ll(int64_t x) {
  return std::to_string(x) + "LL";
}

}  // namespace

cuda_group_code emit_cuda_pool_group(const cuda_group_ctx& g) {
  const auto& p = g.plan;
  const int k = g.core();
  const chain_op& op = g.chain.ops[k];
  const shape_t& s = g.chain.before(k);
  const shape_t& o = g.chain.after[k];
  const int threads = g.knob("threads") > 0 ? g.knob("threads") : 256;
  const std::string side = cuda_side_params(g, p.first, p.last),
                    side_args = cuda_side_args(g, p.first, p.last);
  const std::string epi = cuda_ew_statements(g, k + 1, p.last, "v", "i");
  const std::string kern = g.fn + "_pool";
  const int64_t n_out = numel(o);
  std::string c, launch;

  if (op.op == "global_avg_pool") {
    const int64_t planes = s.size() >= 2 ? s[0] * s[1] : numel(s);
    const int64_t S = numel(s) / std::max<int64_t>(planes, 1);
    const bool block = S >= 4096;
    c +=
        "__global__ void " + kern + "(const float* __restrict__ in, float* __restrict__ out" + side + ") {\n";
    if (block) {
      c += "__shared__ float sh[32];\nfor (long long i = blockIdx.x; i < " + ll(planes) +
           "; i += gridDim.x) {\nconst float* __restrict__ x = in + i * " + ll(S) +
           ";\nfloat acc = 0.0f;\nfor (long long e = threadIdx.x; e < " + ll(S) +
           "; e += blockDim.x) acc += x[e];\nacc = cru_block_sum(acc, sh);\nif (threadIdx.x == 0) {\n";
      launch = kern + "<<<" + std::to_string(std::min<int64_t>(planes, 65535 * 16)) + ", " +
               std::to_string(threads) + ", 0, st>>>(in, out" + side_args + ");\n";
    } else {
      // A warp per plane: lanes stride over it, then a butterfly sum.
      c += "const int lane = threadIdx.x & 31;\nconst long long w0 = (blockIdx.x * (long long)blockDim.x + "
           "threadIdx.x) >> 5;\nconst long long nw = ((long long)gridDim.x * blockDim.x) >> 5;\n";
      c += "for (long long i = w0; i < " + ll(planes) +
           "; i += nw) {\nconst float* __restrict__ x = in + i * " + ll(S) +
           ";\nfloat acc = 0.0f;\nfor (long long e = lane; e < " + ll(S) +
           "; e += 32) acc += x[e];\nacc = cru_warp_sum(acc);\nif (lane == 0) {\n";
      launch = kern + "<<<" + std::to_string(cuda_blocks(planes * 32, threads)) + ", " +
               std::to_string(threads) + ", 0, st>>>(in, out" + side_args + ");\n";
    }
    c += "float v = acc / " + cuda_float(static_cast<double>(S)) + ";\n" + epi + "out[i] = v;\n}\n}\n}\n";
  } else {
    const bool three = op.op == "max_pool3d" || op.op == "avg_pool3d";
    const bool is_max = op.op == "max_pool2d" || op.op == "max_pool3d";
    const int64_t kk = static_cast<int64_t>(attr_of(op, "kernel"));
    const int64_t stride = attr_of(op, "stride") > 0 ? static_cast<int64_t>(attr_of(op, "stride")) : kk;
    const int64_t pad = static_cast<int64_t>(attr_of(op, "padding"));
    const size_t r = s.size();
    // Spatial dims as (D, H, W); a 2d pool has D = 1 with a window of 1 and no padding.
    const int64_t D = three ? s[r - 3] : 1, H = s[r - 2], W = s[r - 1];
    const int64_t DO = three ? o[r - 3] : 1, HO = o[r - 2], WO = o[r - 1];
    const int64_t kd = three ? kk : 1, sd = three ? stride : 1, pd = three ? pad : 0;
    const int64_t vol = kd * kk * kk;
    c +=
        "__global__ void " + kern + "(const float* __restrict__ in, float* __restrict__ out" + side + ") {\n";
    c += "for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < " + ll(n_out) +
         "; i += (long long)gridDim.x * blockDim.x) {\n";
    c += "long long t = i;\nconst int ox = (int)(t % " + ll(WO) + ");\nt /= " + ll(WO) +
         ";\nconst int oy = (int)(t % " + ll(HO) + ");\nt /= " + ll(HO) + ";\nconst int oz = (int)(t % " +
         ll(DO) + ");\nt /= " + ll(DO) + ";\n";
    c += "const float* __restrict__ x = in + t * " + ll(D * H * W) + ";\n";
    c += "const int z0 = oz * " + std::to_string(sd) + " - " + std::to_string(pd) + ", y0 = oy * " +
         std::to_string(stride) + " - " + std::to_string(pad) + ", x0 = ox * " + std::to_string(stride) +
         " - " + std::to_string(pad) + ";\n";
    c += std::string("float acc = ") + (is_max ? "-INFINITY" : "0.0f") + ";\n";
    c += "for (int kz = 0; kz < " + std::to_string(kd) +
         "; ++kz) {\nconst int z = z0 + kz;\nif (z < 0 || z >= " + std::to_string(D) + ") continue;\n";
    c += "for (int ky = 0; ky < " + std::to_string(kk) +
         "; ++ky) {\nconst int y = y0 + ky;\nif (y < 0 || y >= " + std::to_string(H) + ") continue;\n";
    c += "const float* __restrict__ xr = x + ((long long)z * " + ll(H) + " + y) * " + ll(W) + ";\n";
    c += "for (int kx = 0; kx < " + std::to_string(kk) +
         "; ++kx) {\nconst int xx = x0 + kx;\nif (xx < 0 || xx >= " + std::to_string(W) + ") continue;\n";
    c += std::string(is_max ? "acc = fmaxf(acc, xr[xx]);\n" : "acc += xr[xx];\n") + "}\n}\n}\n";
    c += std::string("float v = ") + (is_max ? "acc" : "acc / " + cuda_float(static_cast<double>(vol))) +
         ";\n" + epi + "out[i] = v;\n}\n}\n";
    launch = kern + "<<<" + std::to_string(cuda_blocks(n_out, threads)) + ", " + std::to_string(threads) +
             ", 0, st>>>(in, out" + side_args + ");\n";
  }
  c += g.signature() + "\n(void)X;\n(void)ws;\ncudaStream_t st = (cudaStream_t)ctx->stream;\n" + launch +
       cuda_check_launch() + "return 0;\n}\n";
  return {c, 0, false, false};
}

}  // namespace crucible::kernels
