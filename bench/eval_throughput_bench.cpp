// Evaluations per second on the CPU target, by stage: compile with a cold cache, compile with a warm cache
// (content-hash hit), and the benchmark stage (correctness on every seed, paired timing, post-timing check)
// in one reused worker, for the eager-equivalent program and random programs of every task in the suite.
// Uses the default config's settings (configs/local.yaml), exactly what a training run uses.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "actors/options/benchmark_section.hpp"
#include "actors/options/compiler_section.hpp"
#include "kernels/eval/evaluate.hpp"
#include "kernels/program/emit_cpu.hpp"
#include "kernels/program/program_space.hpp"
#include "kernels/task/task_loader.hpp"
#include "runtime/config/config.hpp"

namespace {

using namespace crucible;
namespace fs = std::filesystem;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0.0 : s / static_cast<double>(v.size());
}

}  // namespace

int main(int argc, char** argv) {
  int per_task = argc > 1 ? std::atoi(argv[1]) : 2;  // random programs per task, besides the eager one
  auto cfg = runtime::parse_config(runtime::embedded_default_config(), {}, "embedded");
  auto suite = kernels::load_task_suite(kernels::default_task_dir(), "cpu");
  if (!cfg || !suite) {
    std::fprintf(stderr, "setup failed: %s\n", !cfg ? cfg.message().c_str() : suite.message().c_str());
    return 1;
  }
  fs::path cache = fs::temp_directory_path() / ("crucible-bench-cache-" + std::to_string(::getpid()));
  fs::remove_all(cache);
  kernels::compiler_options copt = cfg->section<actors::compiler_section>();
  copt.cache_dir = cache.string();
  kernels::bench_runner runner(cfg->section<actors::benchmark_section>().worker,
                               cfg->section<actors::benchmark_section>().runner);
  std::mt19937_64 rng(1);

  std::vector<double> cold, warm, bench;
  int correct = 0, total = 0;
  std::printf("| %-26s | %-8s | %9s | %9s | %9s | %8s |\n", "task", "program", "compile s", "cached s",
              "bench s", "speedup");
  std::printf("|%s|%s|%s|%s|%s|%s|\n", std::string(28, '-').c_str(), std::string(10, '-').c_str(),
              std::string(11, '-').c_str(), std::string(11, '-').c_str(), std::string(11, '-').c_str(),
              std::string(10, '-').c_str());
  auto t_all = std::chrono::steady_clock::now();
  for (const auto& task : *suite) {
    std::vector<std::pair<std::string, kernels::program>> programs = {
        {"eager", kernels::eager_program(task)}};
    for (int i = 0; i < per_task; ++i) programs.push_back({"random", kernels::random_program(task, rng)});
    for (const auto& [label, p] : programs) {
      auto src = kernels::emit_cpu(task, p);
      if (!src) {
        std::printf("| %-26s | %-8s | emitter failed: %s\n", task.name.c_str(), label.c_str(),
                    src.message().c_str());
        continue;
      }
      std::string id = task.name + "-" + std::to_string(total);
      auto t0 = std::chrono::steady_clock::now();
      auto compiled = kernels::compile_source(id, *src, copt);
      double c_cold = seconds_since(t0);
      t0 = std::chrono::steady_clock::now();
      auto again = kernels::compile_source(id, *src, copt);
      double c_warm = seconds_since(t0);
      if (!compiled.ok) {
        std::printf("| %-26s | %-8s | compile failed: %.60s\n", task.name.c_str(), label.c_str(),
                    compiled.log.c_str());
        continue;
      }
      // A repeated program is a cache hit even on the first compile; only true cold compiles are averaged.
      if (!compiled.cached) cold.push_back(c_cold);
      if (again.cached) warm.push_back(c_warm);
      eval_request req{id, task, compiled.artifact, cfg->section<actors::benchmark_section>().eval};
      t0 = std::chrono::steady_clock::now();
      auto r = runner.run(req);
      double b = seconds_since(t0);
      bench.push_back(b);
      ++total;
      correct += r.correct;
      std::printf("| %-26s | %-8s | %9.3f | %9.4f | %9.3f | %7.2fx |\n", task.name.c_str(), label.c_str(),
                  c_cold, c_warm, b, r.speedup_vs_eager);
    }
  }
  double wall = seconds_since(t_all);
  double c = mean(cold), w = mean(warm), e = mean(bench);
  std::printf("\n%d evaluations (%d correct) in %.1f s on one worker\n", total, correct, wall);
  std::printf(
      "mean per evaluation: compile (cold) %.3f s, compile (cache hit) %.4f s, benchmark stage %.3f s\n", c,
      w, e);
  std::printf(
      "evaluations per second, one compiler and one benchmarker in sequence: cold cache %.2f/s, warm "
      "cache %.2f/s\n",
      1.0 / (c + e), 1.0 / (w + e));
  std::printf(
      "with compiles overlapped by %lld compiler actors (the default config), the benchmarker bounds the "
      "pipeline at %.2f/s when compile/%lld <= benchmark stage\n",
      static_cast<long long>(cfg->roles.at("compiler")), 1.0 / std::max(e, c / cfg->roles.at("compiler")),
      static_cast<long long>(cfg->roles.at("compiler")));
  fs::remove_all(cache);
  return 0;
}
