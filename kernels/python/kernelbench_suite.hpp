#pragma once
// The problems of a KernelBench checkout (kernels/task/kernelbench_checkout) as Crucible tasks, each module
// run once to describe it.
#include <functional>
#include <string>
#include <vector>

#include "kernels/task/kernelbench_checkout.hpp"
#include "messages/expected.hpp"
#include "messages/task.hpp"

namespace crucible::kernels {

/// The problems of `level` (0: every level) whose task name `wanted` accepts, as tasks (kernelbench_task:
/// each module runs once), read on CUDA device `device` where this process's torch sees one (today's inputs
/// take minutes on the CPU), else on the CPU: the task is the same either way. A problem that does not load
/// is an error naming it and the key that excludes it.
expected<std::vector<task_spec>> load_kernelbench_tasks(const std::string& root, int level,
                                                        const std::function<bool(const std::string&)>& wanted,
                                                        int device = -1);

}  // namespace crucible::kernels
