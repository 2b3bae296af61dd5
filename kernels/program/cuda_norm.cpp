// channel_norm groups: an elementwise prologue, batch_norm / instance_norm / group_norm, an elementwise
// epilogue. Every norm is "statistics per group of elements, then (v - mean) * rstd [* w[c] + b[c]]":
//   batch_norm     a group per channel c: N segments of S (spatial size) elements, C*S apart
//   instance_norm  a group per (n, c): S contiguous elements
//   group_norm     a group per (n, group): (C/groups)*S contiguous elements
// The variance is biased (torch training-mode normalization). The prologue is recomputed by every pass.
//   two_pass  three kernels: partial statistics (P blocks per group, each a Welford mean and sum of squared
//             deviations over its slice, one read), a merge of the P partials per group (Chan's formula, in
//             order: deterministic), and a normalize kernel over every element with the epilogue fused
//   fused     one kernel, a block per group: Welford per thread, merged over the block, then the block
//             normalizes its own group (two reads of the input instead of three)
#include <algorithm>

#include "kernels/program/cuda_groups.hpp"
#include "kernels/program/cuda_op_code.hpp"

namespace crucible::kernels {
namespace {

std::string ll(int64_t x) {
  return std::to_string(x) + "LL";
}

// Chan's merge of (n, mean, m2) partials; a zero count leaves the other side unchanged.
const char* merge_fn =
    "__device__ __forceinline__ void $merge(float& n, float& m, float& q, float n2, float m2, float q2) {\n"
    "if (n2 == 0.0f) return;\nif (n == 0.0f) {\nn = n2;\nm = m2;\nq = q2;\nreturn;\n}\n"
    "const float nn = n + n2, d = m2 - m;\nm = m + d * (n2 / nn);\nq = q + q2 + d * d * (n * (n2 / nn));\n"
    "n = nn;\n}\n";

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size()))
    s.replace(pos, from.size(), to);
  return s;
}

}  // namespace

cuda_group_code emit_cuda_channel_norm_group(const cuda_group_ctx& g) {
  const auto& p = g.plan;
  const int k = g.core();
  const chain_op& op = g.chain.ops[k];
  const shape_t& s = g.chain.before(k);
  const int64_t N = s[0], C = s.size() > 1 ? s[1] : 1;
  int64_t S = 1;
  for (size_t i = 2; i < s.size(); ++i) S *= s[i];
  const int64_t total = numel(s);
  const bool bn = op.op == "batch_norm", in_norm = op.op == "instance_norm";
  const int64_t groups =
      bn || in_norm ? C : std::max<int64_t>(1, static_cast<int64_t>(attr_of(op, "groups")));
  const int64_t G = bn ? C : N * groups;  // statistics groups
  const int64_t cnt = total / G;          // elements per group
  // Flat index of element e of group gr, and the group of a flat index.
  const std::string elem = bn ? "(e / " + ll(S) + ") * " + ll(C * S) + " + gr * " + ll(S) + " + e % " + ll(S)
                              : "gr * " + ll(cnt) + " + e";
  const std::string group_of = bn ? "(i / " + ll(S) + ") % " + ll(C) : "i / " + ll(cnt);
  const bool affine = op.args.size() >= 2;
  const std::string eps = cuda_float(attr_of(op, "eps"));
  const std::string side = cuda_side_params(g, p.first, p.last),
                    side_args = cuda_side_args(g, p.first, p.last);
  const std::string aff_params = affine ? ", const float* __restrict__ w_, const float* __restrict__ b_" : "";
  const std::string aff_args = affine ? ", X[" + std::to_string(g.input_index(op.args[0])) + "], X[" +
                                            std::to_string(g.input_index(op.args[1])) + "]"
                                      : "";
  const std::string pro = cuda_ew_statements(g, p.first, k - 1, "v", "i");
  // The prologued value of element e of group gr, as `float v`.
  const std::string load = "const long long i = " + elem + ";\nfloat v = in[i];\n" + pro;
  // Normalizes v (prologued, at flat index i of group gr) and stores it with the epilogue.
  const std::string norm =
      "v = (v - mean) * rstd;\n" +
      (affine ? "{\nconst long long ch = (i / " + ll(S) + ") % " + ll(C) + ";\nv = v * w_[ch] + b_[ch];\n}\n"
              : std::string()) +
      cuda_ew_statements(g, k + 1, p.last, "v", "i") + "out[i] = v;\n";
  const std::string merge = replace_all(merge_fn, "$merge", g.fn + "_merge");
  const int threads = 256;
  // Merges every thread's Welford state (n, m, q) over the block: thread 0 ends with the block's (tn, tm,
  // tq). Needs __shared__ sn/sm/sq[32] and lane, warp, nw.
  const std::string welford_block =
      "for (int o = 16; o > 0; o >>= 1) {\nconst float n2 = __shfl_down_sync(0xffffffffu, n, o), m2 = "
      "__shfl_down_sync(0xffffffffu, m, o), q2 = __shfl_down_sync(0xffffffffu, q, o);\n" +
      g.fn + "_merge(n, m, q, n2, m2, q2);\n}\n" +
      "if (lane == 0) {\nsn[warp] = n;\nsm[warp] = m;\nsq[warp] = q;\n}\n__syncthreads();\n" +
      "float tn = 0.0f, tm = 0.0f, tq = 0.0f;\nif (threadIdx.x == 0) {\nfor (int w = 0; w < nw; ++w) " +
      g.fn + "_merge(tn, tm, tq, sn[w], sm[w], sq[w]);\n}\n";
  std::string c, host;
  host = g.signature() + "\n(void)X;\n(void)ws;\ncudaStream_t st = (cudaStream_t)ctx->stream;\n";
  cuda_group_code out;

  if (p.strategy == "fused") {
    c += merge;
    c += "__global__ void " + g.fn + "_norm(const float* __restrict__ in, float* __restrict__ out" +
         aff_params + side +
         ") {\n__shared__ float sn[32], sm[32], sq[32];\n__shared__ float smean, srstd;\n";
    c += "const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;\n";
    c += "for (long long gr = blockIdx.x; gr < " + ll(G) + "; gr += gridDim.x) {\n";
    c += "float n = 0.0f, m = 0.0f, q = 0.0f;\n";
    c += "for (long long e = threadIdx.x; e < " + ll(cnt) + "; e += blockDim.x) {\n" + load +
         "n += 1.0f;\nconst float d = v - m;\nm += d / n;\nq += d * (v - m);\n}\n";
    c += welford_block;
    c +=
        "if (threadIdx.x == 0) {\nsmean = tm;\nsrstd = rsqrtf(tq / tn + " + eps + ");\n}\n__syncthreads();\n";
    c += "const float mean = smean, rstd = srstd;\n";
    c += "for (long long e = threadIdx.x; e < " + ll(cnt) + "; e += blockDim.x) {\n" + load + norm + "}\n";
    c += "__syncthreads();\n}\n}\n";
    host += g.fn + "_norm<<<" + std::to_string(std::min<int64_t>(G, 65535 * 16)) + ", " +
            std::to_string(threads) + ", 0, st>>>(in, out" + aff_args + side_args + ");\n" +
            cuda_check_launch();
  } else {  // two_pass
    // P blocks per group: enough blocks to fill the GPU, each with at least 2048 elements.
    const int64_t P = std::clamp<int64_t>((1056 + G - 1) / G, 1, std::max<int64_t>(1, cnt / 2048));
    const int64_t chunk = (cnt + P - 1) / P;
    out.scratch_floats = 2 * G * P + 2 * G;
    c += merge;
    c += "__global__ void " + g.fn + "_part(const float* __restrict__ in, float* __restrict__ part" + side +
         ") {\n__shared__ float sn[32], sm[32], sq[32];\n";
    c += "const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;\n";
    c += "for (long long b = blockIdx.x; b < " + ll(G * P) + "; b += gridDim.x) {\n";
    c += "const long long gr = b / " + ll(P) + ", e0 = (b % " + ll(P) + ") * " + ll(chunk) + ";\n";
    c += "const long long e1 = e0 + " + ll(chunk) + " < " + ll(cnt) + " ? e0 + " + ll(chunk) + " : " +
         ll(cnt) + ";\n";
    // One read of the slice: Welford per thread, merged over the warp and then the block (Chan's formula).
    c += "float n = 0.0f, m = 0.0f, q = 0.0f;\nfor (long long e = e0 + threadIdx.x; e < e1; e += blockDim.x) "
         "{\n" +
         load + "n += 1.0f;\nconst float d = v - m;\nm += d / n;\nq += d * (v - m);\n}\n";
    c += welford_block;
    c += "if (threadIdx.x == 0) {\npart[2 * b] = tm;\npart[2 * b + 1] = tq;\n}\n__syncthreads();\n}\n}\n";
    c += "__global__ void " + g.fn + "_stats(const float* __restrict__ part, float* __restrict__ stats) {\n";
    c += "for (long long gr = blockIdx.x * (long long)blockDim.x + threadIdx.x; gr < " + ll(G) +
         "; gr += (long long)gridDim.x * blockDim.x) {\nfloat n = 0.0f, m = 0.0f, q = 0.0f;\n";
    c += "for (long long j = 0; j < " + ll(P) + "; ++j) {\nconst long long e0 = j * " + ll(chunk) +
         ";\nconst long long e1 = e0 + " + ll(chunk) + " < " + ll(cnt) + " ? e0 + " + ll(chunk) + " : " +
         ll(cnt) + ";\n" + g.fn + "_merge(n, m, q, (float)(e1 > e0 ? e1 - e0 : 0), part[2 * (gr * " + ll(P) +
         " + j)], part[2 * (gr * " + ll(P) + " + j) + 1]);\n}\n";
    c += "stats[2 * gr] = m;\nstats[2 * gr + 1] = rsqrtf(q / n + " + eps + ");\n}\n}\n";
    c += "__global__ void " + g.fn +
         "_norm(const float* __restrict__ in, float* __restrict__ out, const float* "
         "__restrict__ stats" +
         aff_params + side + ") {\n";
    c += "for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < " + ll(total) +
         "; i += (long long)gridDim.x * blockDim.x) {\nconst long long gr = " + group_of + ";\n";
    c += "const float mean = stats[2 * gr], rstd = stats[2 * gr + 1];\nfloat v = in[i];\n" + pro + norm +
         "}\n}\n";
    const std::string stats = "ws + " + ll(2 * G * P);
    host += g.fn + "_part<<<" + std::to_string(std::min<int64_t>(G * P, 65535 * 16)) + ", " +
            std::to_string(threads) + ", 0, st>>>(in, ws" + side_args + ");\n" + cuda_check_launch();
    host += g.fn + "_stats<<<" + std::to_string(cuda_blocks(G, 128)) + ", 128, 0, st>>>(ws, " + stats +
            ");\n" + cuda_check_launch();
    host += g.fn + "_norm<<<" + std::to_string(cuda_blocks(total, threads)) + ", " + std::to_string(threads) +
            ", 0, st>>>(in, out, " + stats + aff_args + side_args + ");\n" + cuda_check_launch();
  }
  out.code = c + host + "return 0;\n}\n";
  return out;
}

}  // namespace crucible::kernels
