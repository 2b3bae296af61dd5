#pragma once
// A KernelBench checkout's problems by name and place: levelN/ID_Name.py under the folder given, or under its
// KernelBench/ (the repository's layout). Only the file names are read here (no Python): what the problems
// are as tasks is kernels/python/kernelbench_suite's. The benchmark's files stay in the user's checkout.
#include <string>
#include <vector>

#include "messages/expected.hpp"

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

}  // namespace crucible::kernels
