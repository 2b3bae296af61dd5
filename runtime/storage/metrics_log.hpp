#pragma once
// RUN_DIR/metrics.jsonl: one JSON object per learner step, appended and flushed line by line so a run
// killed at any moment leaves a readable file, and a resumed run continues the same file.
#include <cstdint>
#include <map>
#include <string>

#include "messages/expected.hpp"

namespace crucible::runtime {

struct step_metrics {
  int64_t step = 0;
  int64_t policy_version = 0;
  double reward_mean = 0.0;
  double correct_rate = 0.0;
  double flagged_rate = 0.0;
  double speedup_mean = 0.0;     ///< mean verified speedup of the correct candidates in the step
  int64_t candidates = 0;        ///< candidates trained on in this step
  int64_t candidates_total = 0;  ///< candidates scored since the run began
  double staleness_mean = 0.0;   ///< learner version minus generating version, averaged over groups
  double wall_s = 0.0;
  double loss = 0.0;
  double kl = 0.0;
  double entropy = 0.0;
  std::map<std::string, double> speedup_best;  ///< task -> best verified speedup vs eager so far
};

std::string to_json_line(const step_metrics& m);

/// Appends one line to `path`. Returns false (and logs) when the file cannot be written.
bool append_metrics(const std::string& path, const step_metrics& m);

/// A resumed run continues from its checkpoint's step: the lines of later steps describe training whose
/// weights were lost, and the resumed learner writes those steps again. They (and a line torn by the kill)
/// move from `path` to `aside_path`, so each step has one line. Returns the lines moved.
expected<int64_t> roll_back_metrics(const std::string& path, int64_t after_step,
                                    const std::string& aside_path);

/// The one-line terminal summary of a step.
std::string progress_line(const step_metrics& m, double candidates_per_s, size_t tasks_total);

}  // namespace crucible::runtime
