#pragma once
// What a stage's language model writes, measured on the candidates of the stage's run (its replay.sqlite):
// the compile rate, the correct rate, verified speedups vs eager (tasks with a best above 1x, the mean and
// median of the per-task bests), flagged candidates, and the share of correct candidates whose normalised
// source is in no sft example — the evidence that the model writes code rather than copies it. Figures for
// the candidates of the stage's first policy version (the model the previous stage ended with) and for all.
#include <cstdint>
#include <string>
#include <vector>

#include "messages/expected.hpp"

namespace crucible::actors {

struct stage_figures {
  int64_t candidates = 0;
  int64_t format_failures = 0;
  int64_t compiled = 0;
  int64_t correct = 0;
  int64_t flagged = 0;
  int64_t novel_correct = 0;  ///< correct, and its normalised source is in no sft example
  int64_t tasks = 0;          ///< tasks with a verified (passing) candidate
  int64_t tasks_above_1x = 0;
  double speedup_mean = 0.0, speedup_median = 0.0;  ///< of the per-task best verified speedups
};

struct stage_report {
  std::string stage;
  int64_t first_version = 0;
  stage_figures first;  ///< candidates of the first policy version
  stage_figures all;
};

/// Reads `replay_db`; `sft_hashes` are sft_source_hashes() (empty: novelty counts every correct candidate).
expected<stage_report> measure_stage(const std::string& stage, const std::string& replay_db,
                                     const std::vector<std::string>& sft_hashes);

/// A few lines for the terminal, and a JSON object for STAGE_DIR/report.json.
std::string format_stage_report(const stage_report& r);
std::string stage_report_json(const stage_report& r);

}  // namespace crucible::actors
