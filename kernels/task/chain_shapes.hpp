#pragma once
// Shape inference and validation of a task's op chain: every op known, side inputs present with shapes
// that fit, attributes complete. The loader, the reference and the program space all start from this.
#include <cstdint>
#include <string>
#include <vector>

#include "messages/expected.hpp"
#include "messages/task.hpp"

namespace crucible::kernels {

using shape_t = std::vector<int64_t>;

struct chain_shapes {
  shape_t input;               ///< shape of inputs[0]
  std::vector<shape_t> after;  ///< shape of the running value after each op
  const shape_t& output() const { return after.empty() ? input : after.back(); }
};

/// Validates `task` and infers shapes. Errors name the op ("ops[2] (matmul): ...") and what was expected.
expected<chain_shapes> infer_shapes(const task_spec& task);

/// Index of the input named `name`, -1 if none.
int input_index(const task_spec& task, const std::string& name);

int64_t numel(const shape_t& s);
std::string shape_str(const shape_t& s);

/// Tolerances in force for the task (explicit, or the output dtype's default).
double task_atol(const task_spec& task);
double task_rtol(const task_spec& task);

}  // namespace crucible::kernels
