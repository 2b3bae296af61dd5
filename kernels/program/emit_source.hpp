#pragma once
// One entry point for every target's emitter: the generator emits a sampled program through it.
#include <string>
#include <string_view>

#include "kernels/program/program.hpp"
#include "messages/expected.hpp"
#include "messages/task.hpp"

namespace crucible::kernels {

/// "cpu" -> emit_cpu (C++), "cuda" -> emit_cuda (.cu); an error for any other target.
expected<std::string> emit_source(std::string_view target, const task_spec& task, const program& p);

}  // namespace crucible::kernels
