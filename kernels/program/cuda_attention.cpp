// Attention groups: softmax(q k^T * scale [+ causal mask]) v with q the running value [B, H, S, D] and
// k, v [B, H, Skv, D] (causal: key j > query i is masked, as torch's triu(1)), + elementwise epilogue.
//   library  the eager structure: a strided-batched cuBLAS GEMM for the scores (scale as alpha) into
//            scratch, a block-per-row softmax kernel applying the mask, a second strided-batched GEMM
//            for P v, then one epilogue kernel when the group has an epilogue
//   flash    one fused kernel per (query tile of 16, b*h): key/value tiles of 32 staged in shared
//            memory, online softmax per query (a warp handles 4 queries; lane j scores key j of the
//            tile), the output normalized and the epilogue applied at the store. D > 512 (the tiles
//            no longer fit shared memory) falls back to library.
#include <algorithm>
#include <cmath>

#include "kernels/program/cuda_groups.hpp"
#include "kernels/program/cuda_library.hpp"
#include "kernels/program/cuda_op_code.hpp"

namespace crucible::kernels {

cuda_group_code emit_cuda_attention_group(const cuda_group_ctx& g) {
  const auto& p = g.plan;
  const chain_op& op = g.chain.ops[p.first];
  const shape_t& s = g.in_shape();
  const int64_t B = s[0], H = s[1], S = s[2], D = s[3];
  const int64_t Skv = input_shape(g.task, op.args[0])[2];
  const int64_t BH = B * H;
  const double scale = attr_of(op, "scale") > 0 ? attr_of(op, "scale") : 1.0 / std::sqrt(double(D));
  const bool causal = attr_of(op, "causal") != 0;
  const std::string Kp = "X[" + std::to_string(g.input_index(op.args[0])) + "]";
  const std::string Vp = "X[" + std::to_string(g.input_index(op.args[1])) + "]";
  const std::string EXP = g.fast_math() ? "__expf" : "expf";
  const std::string st = "(cudaStream_t)ctx->stream";
  auto str = [](int64_t x) { return std::to_string(x); };
  cuda_group_code out;
  std::string host = g.signature();

  if (p.strategy == "flash" && D <= 512) {
    const int64_t dpl = (D + 31) / 32;
    const std::string Ds = str(D), DPL = str(dpl), Ss = str(S), SKV = str(Skv);
    const std::string I = cuda_index_type(std::max(BH * S * D, BH * Skv * D));
    const int64_t shm_floats = 32 * (D + 1) + 32 * D + 16 * D + 4 * 32;
    std::string k =
        "__global__ void __launch_bounds__(128) " + g.fn +
        "_flash(const float* __restrict__ q, const float* __restrict__ kk, const float* __restrict__ "
        "vv, float* __restrict__ out" +
        cuda_side_params(g, p.first + 1, p.last) + ") {\n";
    k += "extern __shared__ float smem[];\nfloat* Ks = smem;\nfloat* Vs = Ks + 32 * (" + Ds +
         " + 1);\nfloat* Qs = Vs + 32 * " + Ds + ";\nfloat* Ps = Qs + 16 * " + Ds + ";\n";
    k += "const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n";
    k += "const " + I + " bh = blockIdx.y;\nconst int q0 = blockIdx.x * 16;\n";
    k += "const float* qb = q + bh * " + str(S * D) + ";\nconst float* kb = kk + bh * " + str(Skv * D) +
         ";\nconst float* vb = vv + bh * " + str(Skv * D) + ";\n";
    k += "for (int e = threadIdx.x; e < 16 * " + Ds + "; e += 128) {\nconst int qi = q0 + e / " + Ds +
         ";\nQs[e] = qi < " + Ss + " ? qb[(" + I + ")qi * " + Ds + " + e % " + Ds + "] * " +
         cuda_float(scale) + " : 0.0f;\n}\n";
    k += "float m[4], l[4], o[4][" + DPL + "];\n";
    k +=
        "#pragma unroll\nfor (int a = 0; a < 4; ++a) {\nm[a] = -INFINITY;\nl[a] = 0.0f;\n#pragma unroll\nfor "
        "(int t = 0; t < " +
        DPL + "; ++t) o[a][t] = 0.0f;\n}\n";
    k += std::string("const int kend = ") + (causal ? "min(" + SKV + ", q0 + 16)" : SKV) + ";\n";
    k += "for (int kt = 0; kt < kend; kt += 32) {\n__syncthreads();\n";
    k += "for (int e = threadIdx.x; e < 32 * " + Ds + "; e += 128) {\nconst int j = e / " + Ds +
         ", d = e % " + Ds + ";\nconst bool in_range = kt + j < " + SKV + ";\nKs[j * (" + Ds +
         " + 1) + d] = in_range ? kb[(" + I + ")(kt + j) * " + Ds + " + d] : 0.0f;\nVs[j * " + Ds +
         " + d] = in_range ? vb[(" + I + ")(kt + j) * " + Ds + " + d] : 0.0f;\n}\n__syncthreads();\n";
    k += "#pragma unroll\nfor (int a = 0; a < 4; ++a) {\nconst int ql = warp * 4 + a, qi = q0 + ql;\n";
    k += "const int j = kt + lane;\nfloat sc = 0.0f;\nconst float* qr = Qs + ql * " + Ds +
         ";\nconst float* kr = Ks + lane * (" + Ds + " + 1);\nfor (int d = 0; d < " + Ds +
         "; ++d) sc = fmaf(qr[d], kr[d], sc);\n";
    k += std::string("const bool valid = j < ") + SKV + " && qi < " + Ss + (causal ? " && j <= qi" : "") +
         ";\nsc = valid ? sc : -INFINITY;\n";
    k += "const float mnew = fmaxf(m[a], cru_warp_max(sc));\n";
    k += "const float pj = sc == -INFINITY ? 0.0f : " + EXP + "(sc - mnew);\n";
    k += "const float corr = m[a] == -INFINITY ? 0.0f : " + EXP + "(m[a] - mnew);\n";
    k += "l[a] = l[a] * corr + cru_warp_sum(pj);\nm[a] = mnew;\nPs[warp * 32 + lane] = pj;\n__syncwarp();\n";
    k += "#pragma unroll\nfor (int t = 0; t < " + DPL +
         "; ++t) {\nconst int d = lane + 32 * t;\nfloat acc = o[a][t] * corr;\nif (d < " + Ds +
         ") {\n#pragma unroll 8\nfor (int jj = 0; jj < 32; ++jj) acc = fmaf(Ps[warp * 32 + jj], Vs[jj * " +
         Ds + " + d], acc);\n}\no[a][t] = acc;\n}\n__syncwarp();\n}\n}\n";
    k += "#pragma unroll\nfor (int a = 0; a < 4; ++a) {\nconst int qi = q0 + warp * 4 + a;\nif (qi >= " + Ss +
         ") continue;\nconst float inv = 1.0f / l[a];\n#pragma unroll\nfor (int t = 0; t < " + DPL +
         "; ++t) {\nconst int d = lane + 32 * t;\nif (d >= " + Ds + ") continue;\nconst " + I +
         " i = (bh * " + Ss + " + qi) * " + Ds + " + d;\nfloat v = o[a][t] * inv;\n" +
         cuda_ew_statements(g, p.first + 1, p.last, "v", "i") + "out[i] = v;\n}\n}\n}\n";
    out.code = k;
    const int64_t bytes = shm_floats * 4;
    if (bytes > 48 * 1024)
      host += "if (cudaFuncSetAttribute(" + g.fn + "_flash, cudaFuncAttributeMaxDynamicSharedMemorySize, " +
              str(bytes) + ") != cudaSuccess) return 5;\n";
    host += g.fn + "_flash<<<dim3(" + str((S + 15) / 16) + ", " + str(BH) + "), 128, " + str(bytes) + ", " +
            st + ">>>(in, " + Kp + ", " + Vp + ", out" + cuda_side_args(g, p.first + 1, p.last) + ");\n" +
            cuda_check_launch();
    out.code += host + "return 0;\n}\n";
    return out;
  }

  // library
  out.uses_cublas = true;
  out.scratch_floats = BH * S * Skv;
  gemm_dims qk;
  qk.M = S, qk.N = Skv, qk.K = D, qk.trans_b = true, qk.batch = BH;
  qk.stride_a = S * D, qk.stride_b = Skv * D, qk.stride_c = S * Skv, qk.alpha = scale;
  gemm_dims pv;
  pv.M = S, pv.N = D, pv.K = Skv, pv.batch = BH;
  pv.stride_a = S * Skv, pv.stride_b = Skv * D, pv.stride_c = S * D;
  const int threads = static_cast<int>(std::min<int64_t>(256, (Skv + 31) / 32 * 32));
  const std::string I = cuda_index_type(BH * S * Skv), C = str(Skv);
  // Row r is query r % S of its (b, h): with the causal mask its keys j > r % S are out.
  const std::string lim = causal ? "(int)(r % " + str(S) + ") + 1" : C;
  std::string k = "__global__ void __launch_bounds__(" + str(threads) + ") " + g.fn +
                  "_softmax(float* __restrict__ sc) {\n__shared__ float sh[32];\nconst " + I +
                  " r = blockIdx.x;\nfloat* x = sc + r * " + C + ";\nconst int lim = " + lim + ";\n";
  k += "float mx = -INFINITY;\nfor (int c = threadIdx.x; c < lim; c += blockDim.x) mx = fmaxf(mx, x[c]);\nmx "
       "= "
       "cru_block_max(mx, sh);\n";
  k += "float sm = 0.0f;\nfor (int c = threadIdx.x; c < lim; c += blockDim.x) sm += " + EXP +
       "(x[c] - mx);\nsm = cru_block_sum(sm, sh);\nconst float inv = 1.0f / sm;\n";
  k += "for (int c = threadIdx.x; c < " + C + "; c += blockDim.x) x[c] = c < lim ? " + EXP +
       "(x[c] - mx) * inv : 0.0f;\n}\n";
  auto epi = cuda_epilogue(g, p.first + 1, p.last, "out", 256);
  out.code = k + epi.kernel;
  host += cuda_cublas_gemm(qk, "in", Kp, "ws");
  host += g.fn + "_softmax<<<" + str(BH * S) + ", " + str(threads) + ", 0, " + st + ">>>(ws);\n" +
          cuda_check_launch();
  host += cuda_cublas_gemm(pv, "ws", Vp, "out") + epi.launch;
  out.code += host + "return 0;\n}\n";
  return out;
}

}  // namespace crucible::kernels
