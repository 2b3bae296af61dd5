#pragma once
// The CUDA emitter: any program in the task's CUDA space becomes one self-contained .cu file under the
// candidate ABI (kernels/abi/crucible_abi.h), compiled by the compiler stage with
//   nvcc -O3 -std=c++17 -arch=sm_90 -Xcompiler -fPIC -shared ... -lcublas [-lcudnn]
#include <string>

#include "kernels/program/program.hpp"
#include "messages/expected.hpp"
#include "messages/task.hpp"

namespace crucible::kernels {

/// CUDA source for `p` on `task`. An error if `p` is not a legal program for the task on "cuda".
///
/// The file includes <cuda_runtime.h>, <cublas_v2.h> only when a group calls cuBLAS, <cudnn.h> only when
/// a group calls cuDNN, and crucible_abi.h; it defines kernels and one static host function per group
/// (cuda_groups.hpp) and extern "C" crucible_forward, which returns 1 on a null context, wrong
/// n_inputs/n_outputs or null array, 2 when an input's dtype, shape or (contiguous, row-major) strides
/// differ from the task's, 3 for the output, 4 when scratch cannot be had, 5 when a launch failed, 6 when a
/// library call failed, and 0 once all work is enqueued on ctx->stream (no host synchronization).
/// Intermediates between groups and per-group scratch live in ctx->workspace when workspace_bytes
/// suffices, else in cudaMallocAsync'd memory freed (cudaFreeAsync) on the stream within the call.
expected<std::string> emit_cuda(const task_spec& task, const program& p);

/// Bytes of device scratch the emitted code for `p` needs.
expected<size_t> cuda_scratch_bytes(const task_spec& task, const program& p);

}  // namespace crucible::kernels
