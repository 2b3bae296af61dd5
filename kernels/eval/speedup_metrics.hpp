#pragma once
// The figures the field quotes over a set of tasks, one speedup per task (KernelBench's fast_p, CUDA-L1's
// mean and median, METR's geometric mean), computed one way for `crucible report` and `crucible rejudge`.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace crucible::kernels {

/// The thresholds fast_p is quoted at: fast_0 is the correct rate, fast_1 "faster than the baseline".
inline const std::vector<double> fast_p_thresholds = {0.0, 1.0, 1.5, 2.0};

struct fast_p {
  double p = 0;
  size_t tasks = 0;  ///< correct and faster than p
  double share = 0;  ///< of all tasks
};

struct speedup_summary {
  size_t tasks = 0;    ///< every task, correct or not
  size_t correct = 0;  ///< with a speedup (a correct, verified candidate)
  std::vector<fast_p> fast;
  /// Over the correct tasks only.
  double mean = 0, median = 0, geomean = 0;
  /// Over every task, a task without a correct candidate counted at 1x (its reference kept): the convention
  /// of figures that quote a mean over a whole level.
  double mean_all = 0, median_all = 0, geomean_all = 0;
};

/// One entry per task: its speedup, or none where no correct candidate exists. Speedups must be positive.
speedup_summary summarize_speedups(const std::vector<std::optional<double>>& per_task,
                                   const std::vector<double>& thresholds = fast_p_thresholds);

/// "fast_0 0.83 (83/100), fast_1 0.61 (61/100), ..."
std::string format_fast_p(const speedup_summary& s);

/// {tasks, correct, fast_p {"0": {tasks, share}, ...}, mean, median, geomean, mean_all, median_all,
/// geomean_all}: how `crucible rejudge --json` and `crucible report --json` write a summary.
nlohmann::json speedup_summary_json(const speedup_summary& s);

}  // namespace crucible::kernels
