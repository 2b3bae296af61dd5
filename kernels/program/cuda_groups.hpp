#pragma once
// The CUDA emitter's per-kind group emitters (one .cpp each). Each returns __global__ kernels and one host
// function
//   static int g<i>(const cru_context* ctx, const float* const* X, const float* in, float* out, float* ws)
// X: host array of the task's input device pointers (side inputs are read through it); in/out: device
// pointers of the running value before/after the group (never alias); ws: scratch_floats device floats
// for this group, valid for this call only. It enqueues its work on (cudaStream_t)ctx->stream (cuBLAS on
// (cublasHandle_t)ctx->blas, already bound to that stream) and returns 0, or 5 when a launch failed
// (cudaGetLastError), 6 when a library call failed. No host synchronization, no other streams.
//
// Kernel and helper names must be unique in the file: prefix them with fn ("g3_rows", ...). Every emitted
// file starts with the prelude of cuda_op_code.hpp (block/warp reductions, activation helpers).
#include <cstdint>
#include <string>

#include "kernels/program/program.hpp"
#include "kernels/program/rewritten_chain.hpp"

namespace crucible::kernels {

struct cuda_group_ctx {
  const task_spec& task;
  const rewritten_chain& chain;
  const group_plan& plan;
  std::string fn;  ///< host function name, "g<i>"

  /// An integer knob (0 when absent: validated programs always carry their knobs).
  int knob(const std::string& name) const;
  /// A knob as written ("" when absent).
  std::string knob_str(const std::string& name) const;
  /// knob math == "fast": intrinsics (__expf, __logf, ...) instead of the accurate functions.
  bool fast_math() const;
  const shape_t& in_shape() const { return chain.before(plan.first); }
  const shape_t& out_shape() const { return chain.after[plan.last]; }
  /// Index into X of the task input called `name` (-1 if none).
  int input_index(const std::string& name) const;
  /// The group's host function's first line, up to and including '{'.
  std::string signature() const;
  /// Index of the group's core op (its first non-elementwise op; plan.first for an elementwise group).
  int core() const;
};

struct cuda_group_code {
  std::string code;  ///< __global__ kernels + the host function (see above)
  int64_t scratch_floats = 0;
  bool uses_cublas = false;
  bool uses_cudnn = false;
};

// emit-core (cuda_elementwise.cpp, cuda_row.cpp, cuda_gemm.cpp, cuda_bmm.cpp, cuda_attention.cpp).
cuda_group_code emit_cuda_elementwise_group(const cuda_group_ctx& g);
cuda_group_code emit_cuda_row_group(const cuda_group_ctx& g);
cuda_group_code emit_cuda_gemm_group(const cuda_group_ctx& g);
cuda_group_code emit_cuda_gemv_group(const cuda_group_ctx& g);
cuda_group_code emit_cuda_bmm_group(const cuda_group_ctx& g);
cuda_group_code emit_cuda_attention_group(const cuda_group_ctx& g);

// emit-ops (cuda_conv.cpp, cuda_pool.cpp, cuda_norm.cpp, cuda_reduce.cpp, cuda_scan.cpp, cuda_loss.cpp).
// The group's core op is g.chain.ops[g.core()]; ops before it (prologue, where the kind admits one) and
// after it (epilogue) are elementwise.
cuda_group_code emit_cuda_conv_group(const cuda_group_ctx& g);
cuda_group_code emit_cuda_pool_group(const cuda_group_ctx& g);
cuda_group_code emit_cuda_channel_norm_group(const cuda_group_ctx& g);
cuda_group_code emit_cuda_dim_reduce_group(const cuda_group_ctx& g);
cuda_group_code emit_cuda_scan_group(const cuda_group_ctx& g);
cuda_group_code emit_cuda_loss_group(const cuda_group_ctx& g);

}  // namespace crucible::kernels
