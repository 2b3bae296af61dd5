#pragma once
// The task linter rejects tasks where a hack could hide: a reference output that is near-constant (a
// kernel writing zeros or a constant would pass), non-finite, or independent of the inputs; and it reports
// the eager time so suites stay at sizes where a call is not dominated by overhead.
#include <string>
#include <vector>

#include "messages/task.hpp"

namespace crucible::kernels {

struct lint_options {
  int seeds = 3;
  double min_relative_std = 1e-3;  ///< output std / (mean |output| + 1e-12) below this: near-constant
  double min_eager_ms = 0.0;       ///< > 0: a task faster than this gets a problem
  int timing_calls = 5;
};

struct lint_report {
  std::string task;
  bool ok = false;
  std::vector<std::string> problems;
  double eager_ms = 0.0;      ///< median of timing_calls single-thread eager calls
  double output_std = 0.0;
  double output_mean_abs = 0.0;
};

lint_report lint_task(const task_spec& task, const lint_options& options = {});

}  // namespace crucible::kernels
