#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "actors/options/evaluation_config_of.hpp"
#include "cli/commands.hpp"
#include "cli/target_config.hpp"
#include "kernels/eval/evaluate.hpp"
#ifdef CRUCIBLE_WITH_PYTHON
#include "kernels/python/kernelbench_reference.hpp"
#endif
#include "kernels/task/task_loader.hpp"
#include "runtime/config/config.hpp"

namespace crucible::cli {

namespace {

// --task from the suite, or --kernelbench's problem file as a task of its own, read on `device` (< 0: the
// CPU).
expected<task_spec> find_task(const eval_args& args, const runtime::config& cfg, int device) {
  if (!args.kernelbench.empty()) {
#ifdef CRUCIBLE_WITH_PYTHON
    const std::string stem = std::filesystem::path(args.kernelbench).stem().string();
    return kernels::kernelbench_task(args.kernelbench, stem, device);
#else
    (void)device;
    return make_error(
        "--kernelbench: this build has no KernelBench support (it needs python3-dev, "
        "pybind11-dev and python3-torch at configure time)");
#endif
  }
  if (args.task.empty()) return make_error("give --task NAME or --kernelbench PROBLEM.py");
  std::string dir = !args.tasks_dir.empty()  ? args.tasks_dir
                    : !cfg.tasks.dir.empty() ? cfg.tasks.dir
                                             : kernels::default_task_dir();
  auto suite = kernels::load_task_suite(dir, args.target);
  if (!suite) return suite.err();
  for (const auto& t : *suite)
    if (t.name == args.task) return t;
  return make_error("no task named '" + args.task + "' for target " + args.target +
                    " (run `crucible tasks` for the list)");
}

}  // namespace

int eval_command(const eval_args& args) {
  // The target decides the compiler and the worker side; --target wins over the file's.
  const bool cuda = args.target == "cuda";
  auto cfg = target_config(args.config_path, args.overrides, args.target);
  if (!cfg) {
    std::cerr << "crucible eval: " << cfg.message() << "\n";
    return 2;
  }
  const int device =
      cuda ? (args.device >= 0 ? args.device : static_cast<int>(cfg->cuda.devices.front())) : -1;
  auto found = find_task(args, *cfg, device);
  if (!found) {
    std::cerr << "crucible eval: " << found.message() << "\n";
    return 2;
  }
  const task_spec* task = &*found;
  std::ifstream in(args.candidate_path);
  if (!in) {
    std::cerr << "crucible eval: cannot read candidate '" << args.candidate_path << "'\n";
    return 2;
  }
  std::stringstream source;
  source << in.rdbuf();

  // An empty compiler.cache_dir means the user's cache (kernels::default_cache_dir).
  auto ec = actors::evaluation_config_of(*cfg);
  if (cuda) ec.worker.device = device;
  auto result = kernels::evaluate_source(*task, source.str(), ec);
  if (args.json) {
    std::cout << kernels::evaluation_json(result) << std::endl;
    return 0;
  }
  std::cout << kernels::evaluation_text(result, task->name);
  return 0;
}

}  // namespace crucible::cli
