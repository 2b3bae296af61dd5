#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/commands.hpp"
#include "kernels/eval/evaluate.hpp"
#include "kernels/task/task_loader.hpp"
#include "runtime/config.hpp"

namespace crucible::cli {

int eval_command(const eval_args& args) {
  auto cfg = args.config_path.empty() ? runtime::parse_config(runtime::embedded_default_config(),
                                                              args.overrides, "embedded configs/local.yaml")
                                      : runtime::load_config(args.config_path, args.overrides);
  if (!cfg) {
    std::cerr << "crucible eval: " << cfg.message() << "\n";
    return 2;
  }
  if (args.target != "cpu") {
    std::cerr << "crucible eval: target '" << args.target << "' is not built into this binary (CPU only)\n";
    return 2;
  }
  std::string dir = !args.tasks_dir.empty()   ? args.tasks_dir
                    : !cfg->tasks.dir.empty() ? cfg->tasks.dir
                                              : kernels::default_task_dir();
  auto suite = kernels::load_task_suite(dir, args.target);
  if (!suite) {
    std::cerr << "crucible eval: " << suite.message() << "\n";
    return 2;
  }
  const task_spec* task = nullptr;
  for (const auto& t : *suite)
    if (t.name == args.task) task = &t;
  if (!task) {
    std::cerr << "crucible eval: no task named '" << args.task << "' for target " << args.target
              << " (run `crucible tasks` for the list)\n";
    return 2;
  }
  std::ifstream in(args.candidate_path);
  if (!in) {
    std::cerr << "crucible eval: cannot read candidate '" << args.candidate_path << "'\n";
    return 2;
  }
  std::stringstream source;
  source << in.rdbuf();

  kernels::evaluation_config ec;
  ec.compiler = cfg->compiler;  // an empty cache_dir means the user's cache (kernels::default_cache_dir)
  ec.worker = cfg->benchmark.worker;
  ec.runner = cfg->benchmark.runner;
  ec.eval = cfg->benchmark.eval;
  ec.judge = cfg->verifier;
  auto result = kernels::evaluate_source(*task, source.str(), ec);
  if (args.json) {
    std::cout << kernels::evaluation_json(result) << std::endl;
    return 0;
  }
  const auto& v = result.judged;
  std::printf("task       %s (%s)\n", task->name.c_str(), result.target.c_str());
  std::printf("compiled   %s%s\n", result.compiled.ok ? "yes" : "no",
              result.compiled.cached ? " (cached)" : "");
  if (!result.compiled.ok) std::printf("%s\n", result.compiled.log.c_str());
  std::printf("correct    %s (max abs err %.3g, max rel err %.3g)\n", result.bench.correct ? "yes" : "no",
              result.bench.max_abs_err, result.bench.max_rel_err);
  if (result.bench.timed)
    std::printf("time       eager %.3f ms, candidate %.3f ms (median of %zu buckets, spread %.1f%%)\n",
                result.bench.timing.eager_ms_median, result.bench.timing.candidate_ms_median,
                result.bench.timing.bucket_speedups.size(), 100 * result.bench.timing.spread);
  std::printf("verdict    %s", v.outcome.c_str());
  if (v.outcome == "pass") std::printf(", %.2fx vs eager", v.speedup);
  std::printf(" (reward %.3f)\n", v.reward);
  for (const auto& f : v.flags) std::printf("flag       %s\n", f.c_str());
  for (const auto& e : v.evidence) std::printf("evidence   %s\n", e.c_str());
  if (!result.bench.error.empty()) std::printf("error      %s\n", result.bench.error.c_str());
  return 0;
}

}  // namespace crucible::cli
