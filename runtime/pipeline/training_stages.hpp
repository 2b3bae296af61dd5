#pragma once
// CUDA-L1's three training stages as one table, and a run's progress through them (RUN_DIR/stages.json):
// sft (supervised on correct code), self_supervised (sample, check, train on the correct: REINFORCE with a
// 0/1 reward) and contrastive (GRPO on the verified speedup with exemplars in the prompt). `stages:` in the
// config names which run, always in this order; each runs in RUN_DIR/stages/<name>/ as a run of its own, so
// it resumes like any run, and the progress file says which are done.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "messages/expected.hpp"

namespace crucible::runtime {

enum class training_stage { sft, self_supervised, contrastive };

const char* wire_name(training_stage s);
std::optional<training_stage> parse_training_stage(std::string_view name);

/// The stages a config names, checked: known names, each once, in the table's order.
expected<std::vector<training_stage>> parse_stage_list(const std::vector<std::string>& names);

/// Whether a config runs the stages as sub-runs (more than one stage, or sft) or is one plain run.
bool staged(const std::vector<training_stage>& stages);

/// RUN_DIR/stages/<name>: the stage's own run directory.
std::string stage_dir(const std::string& run_dir, training_stage s);

/// The stages of RUN_DIR/stages.json that are done, in order. A run without the file has none done; a file
/// naming a stage the config does not list (another config) is an error.
expected<std::vector<training_stage>> load_stages_done(const std::string& run_dir,
                                                       const std::vector<training_stage>& order);
/// Adds `s` to the done list (written atomically: a temporary file renamed over the old one).
status mark_stage_done(const std::string& run_dir, training_stage s);

/// When the self-supervised stage has stopped improving: the correct rate, averaged over the last `window`
/// steps, has not beaten its best by `min_gain` for `window` steps in a row (a full window first).
class plateau_watch {
 public:
  plateau_watch(int64_t window, double min_gain);
  /// Adds a step's correct rate; true once the stage has plateaued.
  bool add(double correct_rate);
  double best() const { return best_; }

 private:
  int64_t window_;
  double min_gain_;
  std::vector<double> rates_;
  double best_ = -1.0;
  int64_t since_best_ = 0;
};

}  // namespace crucible::runtime
