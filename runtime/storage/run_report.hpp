#pragma once
// `crucible report RUN_DIR`: what a run learned, read back from its metrics.jsonl and replay.sqlite — the
// figures the README quotes, reproducible from any run directory.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kernels/eval/speedup_metrics.hpp"
#include "messages/expected.hpp"

namespace crucible::runtime {

struct task_progress {
  std::string task;
  int64_t groups = 0;         ///< complete groups (partial ones excluded)
  double first_reward = 0.0;  ///< mean reward of the task's first group
  double last_reward = 0.0;   ///< ... and of its last group
  int64_t first_version = 0;
  int64_t last_version = 0;
  double best_speedup = 0.0;   ///< best verified speedup vs eager (0: none passed)
  double best_vs_graph = 0.0;  ///< CUDA: that candidate against the CUDA-graph replay of the reference
};

struct run_report {
  std::string dir;
  int64_t steps = 0;
  double wall_s = 0.0;
  int64_t fifth = 0;                ///< steps in a fifth of the run
  double first_fifth_reward = 0.0;  ///< mean of reward_mean over the first fifth of steps
  double last_fifth_reward = 0.0;
  size_t tasks_total = 0;
  size_t tasks_faster = 0;    ///< tasks with a verified candidate faster than eager
  size_t tasks_improved = 0;  ///< tasks whose last group's mean reward beats their first group's
  /// Over tasks with a verified candidate: mean and median of the best speedup vs eager, and of that
  /// candidate's speedup vs the CUDA graph (CUDA runs; 0 otherwise).
  double mean_best = 0.0, median_best = 0.0, mean_best_vs_graph = 0.0, median_best_vs_graph = 0.0;
  /// The same per-task best speedups as the field quotes them: fast_p over every task, geometric means.
  kernels::speedup_summary vs_eager, vs_graph;
  std::vector<task_progress> tasks;
  std::map<std::string, int64_t> outcomes;
  std::map<std::string, int64_t> hack_flags;  ///< what convicted the hacks (a candidate counts once per flag)
  std::map<std::string, int64_t> reviews;     ///< the judge stage's findings on the outliers it reviewed
  int64_t hack_cases = 0;                     ///< confirmed hacks in the run's case database
  int64_t candidates = 0;
};

expected<run_report> make_run_report(const std::string& run_dir);

std::string format_run_report(const run_report& r);

/// The report as one JSON object (`crucible report --json`): every figure above, per-task rows, and the
/// speedup summaries as `crucible rejudge --json` writes them.
std::string run_report_json(const run_report& r);

/// metrics.jsonl as CSV (`crucible report --csv`): a header, then one row per step; `step` first, then
/// every scalar metric the lines carry, by name (per-task maps left out). An error without metrics.jsonl or
/// with a line that is not a JSON object.
expected<std::string> metrics_csv(const std::string& run_dir);

}  // namespace crucible::runtime
