#pragma once
// RUN_DIR/tb/: the per-step metrics as TensorBoard event files (`tensorboard --logdir RUN_DIR/tb`). A file
// is a sequence of TFRecords (length, masked CRC-32C of the length, an Event protobuf, masked CRC-32C of
// it); the first Event names the file version, each later one carries one step's scalars. Each process
// writes its own file. A resumed run starts its file with a SessionLog START at the step it continues
// from, which tells TensorBoard to drop the older file's later steps, as metrics.jsonl sets them aside.
#include <cstdint>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "messages/expected.hpp"
#include "runtime/storage/metrics_log.hpp"

namespace crucible::runtime {

/// One Event as read back.
struct tensorboard_event {
  double wall_time = 0.0;
  int64_t step = 0;
  std::string file_version;                            ///< set on a file's first event
  std::vector<std::pair<std::string, float>> scalars;  ///< tag -> simple_value, in the file's order
  int32_t session_status = 0;                          ///< SessionLog.status (1: START); 0 without one
};

class tensorboard_log {
 public:
  /// Creates `dir` and a new event file in it. `resumed_at` > 0: the run continues after that step.
  static expected<tensorboard_log> open(const std::string& dir, int64_t resumed_at = 0);

  /// Appends the step's scalars (the metrics.jsonl numbers; speedup_best/TASK per task) and flushes.
  status append(const step_metrics& m);

  const std::string& path() const { return path_; }

 private:
  status write_event(const std::string& event);
  std::ofstream out_;
  std::string path_;
};

/// The Events of one file, each record's framing and both CRCs checked. Errors: a torn or corrupt record
/// (the offset and which check failed), an Event that does not parse.
expected<std::vector<tensorboard_event>> read_tensorboard_events(const std::string& file);

}  // namespace crucible::runtime
