#include "kernels/program/cuda_library.hpp"

#include <algorithm>

#include "kernels/program/cuda_op_code.hpp"

namespace crucible::kernels {
namespace {
std::string str(int64_t x) {
  return std::to_string(x);
}
}  // namespace

const char* cuda_index_type(int64_t n) {
  return n >= (int64_t{1} << 30) ? "int64_t" : "int";
}

std::string cuda_cublas_gemm(const gemm_dims& d, const std::string& a, const std::string& b,
                             const std::string& c) {
  // Row-major C = A·op(B) is column-major C^T = op(B)^T · A^T: B's storage read column-major is B^T
  // ([K,N]: ld N, no transpose) or B ([N,K] used transposed: ld K, transpose), A's is A^T (ld K).
  const std::string ob = d.trans_b ? "CUBLAS_OP_T" : "CUBLAS_OP_N";
  const std::string ldb = d.trans_b ? str(d.K) : str(d.N);
  std::string s = "{\ncublasHandle_t h = (cublasHandle_t)ctx->blas;\n";
  s += "if (cublasSetMathMode(h, CUBLAS_DEFAULT_MATH) != CUBLAS_STATUS_SUCCESS) return 6;\n";
  s += "const float alpha = " + cuda_float(d.alpha) + ", beta = 0.0f;\n";
  if (d.batch == 1)
    s += "if (cublasSgemm(h, " + ob + ", CUBLAS_OP_N, " + str(d.N) + ", " + str(d.M) + ", " + str(d.K) +
         ", &alpha, " + b + ", " + ldb + ", " + a + ", " + str(d.K) + ", &beta, " + c + ", " + str(d.N) +
         ") != CUBLAS_STATUS_SUCCESS) return 6;\n";
  else
    s += "if (cublasSgemmStridedBatched(h, " + ob + ", CUBLAS_OP_N, " + str(d.N) + ", " + str(d.M) + ", " +
         str(d.K) + ", &alpha, " + b + ", " + ldb + ", " + str(d.stride_b) + "LL, " + a + ", " + str(d.K) +
         ", " + str(d.stride_a) + "LL, &beta, " + c + ", " + str(d.N) + ", " + str(d.stride_c) + "LL, " +
         str(d.batch) + ") != CUBLAS_STATUS_SUCCESS) return 6;\n";
  return s + "}\n";
}

kernel_and_launch cuda_epilogue(const cuda_group_ctx& g, int first, int last, const std::string& buf,
                                int threads) {
  if (first > last) return {};
  const int64_t n = numel(g.chain.before(first));
  const std::string I = cuda_index_type(n);
  const std::string name = g.fn + "_epi";
  kernel_and_launch out;
  out.kernel = "__global__ void __launch_bounds__(" + str(threads) + ") " + name + "(float* __restrict__ y" +
               cuda_side_params(g, first, last) + ") {\nfor (" + I + " i = blockIdx.x * (" + I +
               ")blockDim.x + threadIdx.x; i < " + str(n) + "; i += (" + I +
               ")gridDim.x * blockDim.x) {\nfloat v = y[i];\n" +
               cuda_ew_statements(g, first, last, "v", "i") + "y[i] = v;\n}\n}\n";
  out.launch = name + "<<<" + str(cuda_blocks(n, threads)) + ", " + str(threads) +
               ", 0, (cudaStream_t)ctx->stream>>>(" + buf + cuda_side_args(g, first, last) + ");\n" +
               cuda_check_launch();
  return out;
}

std::string cuda_tiled_gemm_kernel(const cuda_group_ctx& g, const std::string& name, const gemm_dims& d,
                                   int tile, int epi_first, int epi_last) {
  const int R = tile / 16;  // outputs per thread along each dim
  const std::string T = str(tile), M = str(d.M), N = str(d.N), K = str(d.K);
  const int64_t total = d.batch * d.M * d.N;
  const std::string I = cuda_index_type(std::max({total, d.batch * d.stride_a, d.batch * d.stride_b}));
  std::string s = "__global__ void __launch_bounds__(256) " + name +
                  "(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C" +
                  cuda_side_params(g, epi_first, epi_last) + ") {\n";
  s += "__shared__ float As[16][" + T + " + 4];\n__shared__ float Bs[16][" + T + " + 4];\n";
  s += "const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;\n";
  s += "const int row0 = blockIdx.y * " + T + ", col0 = blockIdx.x * " + T + ";\n";
  s += "const " + I + " z = blockIdx.z;\n";
  s += "const float* Ab = A + z * " + str(d.stride_a) + ";\nconst float* Bb = B + z * " + str(d.stride_b) +
       ";\n";
  s += "float acc[" + str(R) + "][" + str(R) + "];\n";
  s += "#pragma unroll\nfor (int i = 0; i < " + str(R) + "; ++i)\n#pragma unroll\nfor (int j = 0; j < " +
       str(R) + "; ++j) acc[i][j] = 0.0f;\n";
  s += "for (int k0 = 0; k0 < " + K + "; k0 += 16) {\n";
  // A tile: tile rows x 16 k, stored k-major so a thread reads its rows' values with one index.
  s += "for (int e = threadIdx.x; e < " + str(16 * tile) + "; e += 256) {\n";
  s += "const int r = e / 16, k = e % 16;\nconst int gr = row0 + r, gk = k0 + k;\n";
  s += "As[k][r] = (gr < " + M + " && gk < " + K + ") ? Ab[(" + I + ")gr * " + K + " + gk] : 0.0f;\n}\n";
  s += "for (int e = threadIdx.x; e < " + str(16 * tile) + "; e += 256) {\n";
  if (d.trans_b) {  // B is [N, K]: read along k for coalescing
    s += "const int c = e / 16, k = e % 16;\nconst int gc = col0 + c, gk = k0 + k;\n";
    s += "Bs[k][c] = (gc < " + N + " && gk < " + K + ") ? Bb[(" + I + ")gc * " + K + " + gk] : 0.0f;\n}\n";
  } else {
    s += "const int k = e / " + T + ", c = e % " + T + ";\nconst int gc = col0 + c, gk = k0 + k;\n";
    s += "Bs[k][c] = (gc < " + N + " && gk < " + K + ") ? Bb[(" + I + ")gk * " + N + " + gc] : 0.0f;\n}\n";
  }
  s += "__syncthreads();\n";
  // Thread (tx, ty) owns rows ty + 16 i and columns tx + 16 j: strided, so shared reads do not conflict.
  s += "#pragma unroll\nfor (int k = 0; k < 16; ++k) {\nfloat a[" + str(R) + "], b[" + str(R) + "];\n";
  s += "#pragma unroll\nfor (int i = 0; i < " + str(R) + "; ++i) a[i] = As[k][ty + 16 * i];\n";
  s += "#pragma unroll\nfor (int j = 0; j < " + str(R) + "; ++j) b[j] = Bs[k][tx + 16 * j];\n";
  s += "#pragma unroll\nfor (int i = 0; i < " + str(R) + "; ++i)\n#pragma unroll\nfor (int j = 0; j < " +
       str(R) + "; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);\n}\n";
  s += "__syncthreads();\n}\n";
  s += "#pragma unroll\nfor (int i = 0; i < " + str(R) + "; ++i) {\nconst int r = row0 + ty + 16 * i;\n";
  s += "if (r >= " + M + ") continue;\n";
  s += "#pragma unroll\nfor (int j = 0; j < " + str(R) + "; ++j) {\nconst int c = col0 + tx + 16 * j;\n";
  s += "if (c >= " + N + ") continue;\n";
  s += "const " + I + " o = z * " + str(d.M * d.N) + " + (" + I + ")r * " + N + " + c;\n";
  s += "float v = acc[i][j];\n" + cuda_ew_statements(g, epi_first, epi_last, "v", "o") +
       "C[o] = v;\n}\n}\n}\n";
  return s;
}

std::string cuda_tiled_gemm_launch(const cuda_group_ctx& g, const std::string& name, const gemm_dims& d,
                                   int tile, int epi_first, int epi_last, const std::string& a,
                                   const std::string& b, const std::string& c) {
  const std::string grid = "dim3(" + str((d.N + tile - 1) / tile) + ", " + str((d.M + tile - 1) / tile) +
                           ", " + str(d.batch) + ")";
  return name + "<<<" + grid + ", 256, 0, (cudaStream_t)ctx->stream>>>(" + a + ", " + b + ", " + c +
         cuda_side_args(g, epi_first, epi_last) + ");\n" + cuda_check_launch();
}

}  // namespace crucible::kernels
