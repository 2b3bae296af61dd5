#pragma once
// Building blocks the CUDA gemm, gemv, bmm and attention groups share: row-major cuBLAS calls, the fused
// epilogue kernel that follows a library call, and the shared-memory tiled SGEMM kernel.
#include <cstdint>
#include <string>

#include "kernels/program/cuda_groups.hpp"

namespace crucible::kernels {

/// Row-major GEMM shape: C[M,N] = alpha * A[M,K] · B (B is [K,N], or [N,K] used transposed when trans_b),
/// `batch` of them at the given element strides (batch 1: a plain cublasSgemm).
struct gemm_dims {
  int64_t M = 0, N = 0, K = 0;
  bool trans_b = false;
  int64_t batch = 1, stride_a = 0, stride_b = 0, stride_c = 0;
  double alpha = 1.0;
};

/// Host statements calling cuBLAS on ctx->blas (FP32, CUBLAS_DEFAULT_MATH: no TF32) for `d`; they return
/// 6 from the host function when cuBLAS fails. a, b, c are device pointer expressions.
std::string cuda_cublas_gemm(const gemm_dims& d, const std::string& a, const std::string& b,
                             const std::string& c);

/// A kernel `<fn>_epi` applying ops [first, last] (elementwise) of the group in place to `n` floats whose
/// running shape is chain.before(first), and the host statements launching it on `buf`. Empty strings when
/// first > last.
struct kernel_and_launch {
  std::string kernel;
  std::string launch;
};
kernel_and_launch cuda_epilogue(const cuda_group_ctx& g, int first, int last, const std::string& buf,
                                int threads = 256);

/// The tiled SGEMM kernel `<name>`: tile x tile outputs per block of 256 threads (a (tile/16)^2 register
/// block each), BK = 16, shared-memory staging, bounds-checked for any M, N, K; batched over blockIdx.z
/// with the strides of `d`; applies ops [epi_first, epi_last] of the group to each output (flat index
/// z * M * N + row * N + col) in its store. Launch: cuda_tiled_gemm_launch.
std::string cuda_tiled_gemm_kernel(const cuda_group_ctx& g, const std::string& name, const gemm_dims& d,
                                   int tile, int epi_first, int epi_last);
std::string cuda_tiled_gemm_launch(const cuda_group_ctx& g, const std::string& name, const gemm_dims& d,
                                   int tile, int epi_first, int epi_last, const std::string& a,
                                   const std::string& b, const std::string& c);

/// "int" when every index below n fits comfortably, else "int64_t".
const char* cuda_index_type(int64_t n);

}  // namespace crucible::kernels
