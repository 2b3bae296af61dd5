#pragma once
// The problems of a KernelBench checkout: levelN/ID_Name.py under the folder given, or under its
// KernelBench/ (the repository's layout). The benchmark's files stay in the user's checkout; Crucible only
// reads them.
#include <functional>
#include <string>
#include <vector>

#include "messages/expected.hpp"
#include "messages/task.hpp"

namespace crucible::kernels {

struct kernelbench_problem {
  int level = 0;
  int id = 0;
  std::string name;  ///< "Square_matrix_multiplication_"
  std::string path;
  /// The task's name in Crucible: "kb1_<id>_<name>".
  std::string task_name() const;
};

/// Every problem in levels 1-4 (or only `level`), by level then id. An error when the folder holds no level
/// folder; files not named ID_Name.py are skipped.
expected<std::vector<kernelbench_problem>> scan_kernelbench(const std::string& root, int level = 0);

/// The problems of `level` (0: every level) whose task name `wanted` accepts, as tasks (kernelbench_task:
/// each module runs once), read on CUDA device `device` where this process's torch sees one (today's inputs
/// take minutes on the CPU), else on the CPU: the task is the same either way. A problem that does not load
/// is an error naming it and the key that excludes it.
expected<std::vector<task_spec>> load_kernelbench_tasks(const std::string& root, int level,
                                                        const std::function<bool(const std::string&)>& wanted,
                                                        int device = -1);

}  // namespace crucible::kernels
