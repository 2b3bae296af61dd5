#pragma once
// The CPU emitter: any program in the task's space becomes one self-contained C++ file under the candidate
// ABI (kernels/abi/crucible_abi.h), compiled by the compiler stage with g++ into a shared object.
#include <string>

#include "kernels/program/program.hpp"
#include "messages/expected.hpp"
#include "messages/task.hpp"

namespace crucible::kernels {

/// C++ source for `p` on `task`. An error if `p` is not a legal program for the task.
expected<std::string> emit_cpu(const task_spec& task, const program& p);

}  // namespace crucible::kernels
