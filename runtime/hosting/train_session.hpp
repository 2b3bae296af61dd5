#pragma once
// One training run from start to orderly end: starts the actor system and the supervisor (which starts
// every role), shows progress, and stops when the learner has taken run.max_steps steps, run.max_minutes
// have passed, or the user pressed Ctrl-C. Stopping is ordered so nothing is lost: the conductor stops
// starting groups and drains what is in flight (up to run.shutdown_grace_s), the learner writes a
// checkpoint, then every actor stops.
#include <memory>
#include <string>

#include "messages/control.hpp"
#include "runtime/config/run_context.hpp"
#include "runtime/hosting/role_registry.hpp"

namespace crucible::runtime {

struct train_summary {
  int64_t steps = 0;
  status_report conductor;   ///< generated / scored / in flight at the end
  bool interrupted = false;  ///< Ctrl-C
  bool timed_out = false;    ///< run.max_minutes reached
  std::string ended_early;   ///< why the learner ended the run before its budget (empty: it did not)
  double wall_s = 0.0;
};

/// Runs training. Installs SIGINT/SIGTERM handlers for its duration.
expected<train_summary> run_training(std::shared_ptr<const run_context> run,
                                     std::shared_ptr<const role_registry> registry);

/// Asks a running run_training to stop as if Ctrl-C was pressed (tests, signal handlers).
void request_stop();

}  // namespace crucible::runtime
