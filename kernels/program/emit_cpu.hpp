#pragma once
// The CPU emitter: any program in the task's space becomes one self-contained C++ file under the candidate
// ABI (kernels/abi/crucible_abi.h), compiled by the compiler stage with g++ into a shared object.
#include <string>

#include "kernels/program/program.hpp"
#include "messages/expected.hpp"
#include "messages/task.hpp"

namespace crucible::kernels {

/// C++ source for `p` on `task`. An error if `p` is not a legal program for the task.
///
/// The file includes only <cmath>, <cstdint>, <cstdlib>, <cstring> and crucible_abi.h (compile time is the
/// RL loop's bottleneck), defines one static function per group and
///   extern "C" int crucible_forward(ctx, inputs, n_inputs, outputs, n_outputs)
/// which returns 1 on a wrong n_inputs/n_outputs or null array, 2 when an input's dtype, shape or
/// (contiguous, row-major) strides differ from the task's, 3 for the output, 4 when scratch memory cannot be
/// had, and 0 after writing every output element. Intermediates between groups and per-group scratch
/// (packed weights, a materialized row, the GEMV's W·a) live in one scratch block: ctx->workspace when it
/// is non-null and workspace_bytes suffices, else malloc'd and freed within the call. Nothing is cached
/// across calls, no thread is started, no clock read; blas groups call cblas_sgemm (declared in the file;
/// link with -lblas or load into a process that has it).
expected<std::string> emit_cpu(const task_spec& task, const program& p);

/// Bytes of scratch the emitted code for `p` needs (what ctx->workspace must offer for it to be used).
expected<size_t> cpu_scratch_bytes(const task_spec& task, const program& p);

}  // namespace crucible::kernels
