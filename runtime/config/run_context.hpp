#pragma once
// What every actor of one run shares, read-only once the run starts: the resolved config, the run
// directory and the task suite. Created by the CLI before the actor system starts.
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "messages/expected.hpp"
#include "messages/task.hpp"
#include "runtime/config/config.hpp"

namespace crucible::runtime {

struct run_context {
  config cfg;
  std::string dir;               ///< absolute run directory
  std::vector<task_spec> tasks;  ///< the tasks this run trains on, sorted by name
  std::map<std::string, task_spec> task_by_name;
  bool resume = false;      ///< continuing a run: checkpoints and replay are reused
  std::string incarnation;  ///< distinguishes ids made by a resumed run from the run it resumes
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  double start_unix = 0.0;
  /// Set once the run has drained and its actors are being stopped: waits on something outside the process
  /// (a served model) end then, so no actor holds up the end of the run (policy::set_interrupt).
  std::shared_ptr<std::atomic<bool>> stopping = std::make_shared<std::atomic<bool>>(false);

  std::string path(const std::string& name) const { return dir + "/" + name; }
  double elapsed_s() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
};

/// Creates (or, with resume, reopens) the run directory, writes config.yaml, loads and filters the tasks,
/// and binds the config sections' paths inside it (the compile cache, the worker log). Errors name what is
/// wrong (unknown task in tasks.include, a run directory that already holds a run when not resuming, ...).
expected<std::shared_ptr<run_context>> prepare_run(const config& cfg, bool resume);

/// The tasks `cfg` trains on: the suite of tasks.dir (default: the source tree's) for cfg.target, or the
/// problems of tasks.kernelbench_dir, filtered by tasks.include / tasks.exclude, sorted by name. Errors name
/// the key (an unknown include, nothing left, a problem that does not load).
expected<std::vector<task_spec>> select_tasks(const config& cfg);

/// The names select_tasks would give, without reading a task (a KernelBench problem's module is not run):
/// for a report on a run, which may still be measuring on the device.
expected<std::vector<std::string>> select_task_names(const config& cfg);

/// KernelBench problems as tasks: a checkout's `level` (0: every level), only those whose task name `wanted`
/// accepts, read on CUDA device `device` (< 0: the CPU). Needs the embedded Python, so the executable that
/// links it registers the loader; without one, tasks.kernelbench_dir is an error that says so.
using kernelbench_task_loader = std::function<expected<std::vector<task_spec>>(
    const std::string& root, int level, const std::function<bool(const std::string&)>& wanted, int device)>;
void set_kernelbench_task_loader(kernelbench_task_loader loader);

/// Loads the config a run directory was started with (for --resume), applying `overrides`.
expected<config> load_run_config(const std::string& run_dir, const std::vector<std::string>& overrides);

double unix_now();

}  // namespace crucible::runtime
