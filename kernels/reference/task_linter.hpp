#pragma once
// The task linter rejects tasks where a hack could hide: a reference output that is near-constant (a
// kernel writing zeros or a constant would pass), non-finite, or independent of the inputs; and it reports
// the eager time so suites stay at sizes where a call is not dominated by overhead.
#include <string>
#include <vector>

#include "kernels/reference/reference_model.hpp"
#include "messages/task.hpp"

namespace crucible::kernels {

struct lint_options {
  int seeds = 3;  ///< each run on nominal and heavy-tailed inputs; at least 2 (input dependence compares two)
  /// Output std / (mean |output| + 1e-12) below this: near-constant. Over the elements of each run's output;
  /// for a scalar output (a loss), over the nominal runs' values across seeds.
  double min_relative_std = 1e-3;
  double min_eager_ms = 0.0;  ///< > 0: a task faster than this gets a problem
  int timing_calls = 5;
  /// Largest share of the task's tolerance that float32 rounding alone may use (the float32 reference
  /// against the same chain in float64). A correct candidate rounds differently from the reference (other
  /// summation order, a rewrite), so the tolerance needs headroom of about 2x over the reference's own error.
  double max_tolerance_use = 0.5;
};

struct lint_report {
  std::string task;
  bool ok = false;
  std::vector<std::string> problems;
  double eager_ms = 0.0;    ///< median of timing_calls single-thread eager calls
  double output_std = 0.0;  ///< of the nominal output for the first seed (scalar output: across seeds)
  double output_mean_abs = 0.0;
  double tolerance_use = 0.0;  ///< max over elements and runs of |ref32 - ref64| / (atol + rtol |ref64|)
};

/// Runs the reference on `options.seeds` seeds, nominal and heavy-tailed inputs, and reports every reason
/// the task could not measure a candidate honestly. Sets LibTorch's thread count to 1 while timing and
/// restores it after; not safe to call concurrently with other LibTorch work that depends on that setting.
lint_report lint_task(const task_spec& task, const lint_options& options = {});

/// The checks on outputs alone (non-finite, near-constant, input-independent, all-zero), for any reference:
/// what lint_task applies to a chain task, applied to a KernelBench module's Model. No eager time (a module's
/// is measured by its own listing) and no float64 tolerance check (a module has no float64 twin).
lint_report lint_outputs(const task_spec& task, const reference_model& ref, const lint_options& options = {});

/// A fixed-width table of a suite, one row per report: name, family, shape of inputs[0] -> output shape,
/// number of ops, eager ms and the lint verdict, followed by each problem on its own line. `tasks` supplies
/// family and shapes (matched by name; a report without a task prints blanks). For `crucible tasks`.
std::string format_task_table(const std::vector<lint_report>& reports, const std::vector<task_spec>& tasks);

}  // namespace crucible::kernels
