#include <cstdio>
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
#include "kernels/verify/verdict_vocabulary.hpp"
#include "runtime/config/config.hpp"

namespace crucible::cli {

namespace {

// --task from the suite, or --kernelbench's problem file as a task of its own.
expected<task_spec> find_task(const eval_args& args, const runtime::config& cfg) {
  if (!args.kernelbench.empty()) {
#ifdef CRUCIBLE_WITH_PYTHON
    const std::string stem = std::filesystem::path(args.kernelbench).stem().string();
    return kernels::kernelbench_task(args.kernelbench, stem);
#else
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
  auto found = find_task(args, *cfg);
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
  if (cuda) ec.worker.device = args.device >= 0 ? args.device : static_cast<int>(cfg->cuda.devices.front());
  auto result = kernels::evaluate_source(*task, source.str(), ec);
  if (args.json) {
    std::cout << kernels::evaluation_json(result) << std::endl;
    return 0;
  }
  const auto& v = result.judged;
  std::printf("task       %s (%s)\n", task->name.c_str(), result.target.c_str());
  if (result.cand.language == "py")
    std::printf("staged     %s (a Python module: no compiler)\n", result.compiled.ok ? "yes" : "no");
  else
    std::printf("compiled   %s%s\n", result.compiled.ok ? "yes" : "no",
                result.compiled.cached ? " (cached)" : "");
  if (!result.compiled.ok) std::printf("%s\n", result.compiled.log.c_str());
  std::printf("correct    %s (max abs err %.3g, max rel err %.3g)\n", result.bench.correct ? "yes" : "no",
              result.bench.max_abs_err, result.bench.max_rel_err);
  const auto& t = result.bench.timing;
  if (result.bench.timed) {
    std::printf("time       eager %.4f ms, candidate %.4f ms (median of %zu buckets, spread %.1f%%)\n",
                t.eager_ms_median, t.candidate_ms_median, t.bucket_speedups.size(), 100 * t.spread);
    if (t.graph_ms_median > 0)
      std::printf("graph      CUDA-graph reference %.4f ms: %.2fx vs graph\n", t.graph_ms_median,
                  t.speedup_vs_graph);
    if (t.compile_ms_median > 0)
      std::printf("compile    torch.compile reference %.4f ms: %.2fx vs torch.compile\n", t.compile_ms_median,
                  t.speedup_vs_compile);
    if (t.compile_ro_ms_median > 0)
      std::printf("compile    torch.compile reduce-overhead %.4f ms: %.2fx vs it\n", t.compile_ro_ms_median,
                  t.speedup_vs_compile_ro);
  }
  std::printf("verdict    %s", v.outcome.c_str());
  if (kernels::has_outcome(v, kernels::outcome::pass)) std::printf(", %.2fx vs eager", v.speedup);
  if (kernels::has_outcome(v, kernels::outcome::pass) && t.speedup_vs_graph > 0)
    std::printf(", %.2fx vs CUDA graph", t.speedup_vs_graph);
  std::printf(" (reward %.3f)\n", v.reward);
  for (const auto& f : v.flags) std::printf("flag       %s\n", f.c_str());
  for (const auto& e : v.evidence) std::printf("evidence   %s\n", e.c_str());
  if (!result.bench.error.empty()) std::printf("error      %s\n", result.bench.error.c_str());
  return 0;
}

}  // namespace crucible::cli
