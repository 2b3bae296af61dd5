// Throughput and stability of the evaluation engine, measured (not asserted): evaluations per second of a
// correct candidate on an elementwise suite task with default eval_options, where the time goes, and how
// much the reported speedup moves across repeated evaluations. Opt-in (slow): CRUCIBLE_EVAL_MEASURE=1.
// CRUCIBLE_EVAL_MEASURE_RUNS overrides the number of repeated evaluations (default 10).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <numeric>
#include <regex>

#include <gtest/gtest.h>

#include "eval_test_support.hpp"
#include "kernels/task/task_loader.hpp"

namespace crucible::kernels {
namespace {

double stat_mean(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / v.size();
}
double stat_cv(const std::vector<double>& v) {
  double m = stat_mean(v), ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  return v.size() > 1 ? std::sqrt(ss / (v.size() - 1)) / m : 0.0;
}
double stat_median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

std::map<std::string, double> phases(const bench_result& r) {
  std::map<std::string, double> out;
  static const std::regex re(R"(([a-z_]+) \(?([0-9.eE+-]+))");
  for (const auto& n : r.notes)
    if (n.rfind("phases_ms:", 0) == 0)
      for (std::sregex_iterator it(n.begin(), n.end(), re), end; it != end; ++it)
        out[(*it)[1]] = std::stod((*it)[2]);
  return out;
}

void measure(const task_spec& task, const std::string& candidate) {
  int runs = 10;
  if (const char* env = std::getenv("CRUCIBLE_EVAL_MEASURE_RUNS")) runs = std::max(2, std::atoi(env));
  auto config = test::test_config();
  config.eval = eval_options{};  // defaults
  config.runner = runner_options{};
  config.compiler.cache_dir = test::scratch_dir() + "/measure-" + task.name;
  std::string source = test::candidate_source(candidate);

  auto cold = compile_source("cold", source, config.compiler);
  ASSERT_TRUE(cold.ok) << cold.log;
  auto warm = compile_source("warm", source, config.compiler);
  ASSERT_TRUE(warm.cached);

  bench_runner runner(config.worker, config.runner);
  auto t_start = std::chrono::steady_clock::now();
  auto first = evaluate_source(task, source, config, &runner);  // starts the worker, builds the reference
  double first_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  ASSERT_EQ(first.judged.outcome, "pass")
      << first.bench.error << ::testing::PrintToString(first.bench.evidence)
      << ::testing::PrintToString(first.bench.notes);

  std::vector<double> speedups, walls, compile_s, bench_s, spreads, reruns, eager_ms, cand_ms;
  std::map<std::string, std::vector<double>> phase_ms;
  int attempts_total = 0;
  int retaken = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < runs; ++i) {
    auto s = std::chrono::steady_clock::now();
    auto e = evaluate_source(task, source, config, &runner);
    walls.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - s).count());
    ASSERT_EQ(e.judged.outcome, "pass") << e.bench.error << ::testing::PrintToString(e.bench.evidence);
    speedups.push_back(e.bench.speedup_vs_eager);
    compile_s.push_back(e.compiled.seconds);
    bench_s.push_back(e.bench.wall_s);
    spreads.push_back(e.bench.timing.spread);
    eager_ms.push_back(e.bench.timing.eager_ms_median);
    cand_ms.push_back(e.bench.timing.candidate_ms_median);
    reruns.push_back(e.bench.timing.reruns);
    attempts_total += e.bench.attempts;
    for (auto& [k, v] : phases(e.bench)) phase_ms[k].push_back(v);
    for (const auto& n : e.bench.notes)
      if (n.rfind("preemption: ", 0) == 0) retaken += std::atoi(n.c_str() + 12);
  }
  double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::printf(
      "\n== %s / %s, default eval_options (seeds %d, input_sets %d, warmup %d, buckets %d x trials %d)\n",
      task.name.c_str(), candidate.c_str(), eval_options{}.seeds, eval_options{}.input_sets,
      eval_options{}.warmup, eval_options{}.buckets, eval_options{}.trials);
  std::printf("compile cold %.3f s, warm (cache hit) %.4f s\n", cold.seconds, warm.seconds);
  std::printf("first evaluation (worker start + reference build + evaluation): %.3f s\n", first_s);
  std::printf("%d warm evaluations in %.3f s: %.2f evaluations/s (median wall %.3f s; attempts %d)\n", runs,
              total, runs / total, stat_median(walls), attempts_total);
  std::printf("per evaluation, median: compile (cached) %.4f s, bench round trip %.3f s\n",
              stat_median(compile_s), stat_median(bench_s));
  for (auto& [k, v] : phase_ms)
    std::printf("  worker phase %-12s median %8.2f ms\n", k.c_str(), stat_median(v));
  std::printf("speedup vs eager: median %.3f, mean %.3f, min %.3f, max %.3f, CV over %d evaluations %.4f\n",
              stat_median(speedups), stat_mean(speedups), *std::min_element(speedups.begin(), speedups.end()),
              *std::max_element(speedups.begin(), speedups.end()), runs, stat_cv(speedups));
  std::printf(
      "within-evaluation bucket CV: median %.4f; variance-gate reruns: %g of %d evaluations; "
      "preempted trials re-taken: %d\n",
      stat_median(spreads), std::accumulate(reruns.begin(), reruns.end(), 0.0), runs, retaken);
  std::printf("per evaluation: speedup (eager ms / candidate ms)\n ");
  for (size_t i = 0; i < speedups.size(); ++i)
    std::printf(" %.3f (%.3g/%.3g)", speedups[i], eager_ms[i], cand_ms[i]);
  std::printf("\n");
}

bool enabled() {
  const char* env = std::getenv("CRUCIBLE_EVAL_MEASURE");
  return env && *env && std::string(env) != "0";
}

TEST(Measurement, SuiteElementwiseTask) {
  if (!enabled()) GTEST_SKIP() << "set CRUCIBLE_EVAL_MEASURE=1 to measure";
  auto task = load_task_file(default_task_dir() + "/bias_gelu.yaml");
  ASSERT_TRUE(task) << task.message();
  measure(*task, "bias_gelu_fused");
}

TEST(Measurement, TestTask) {
  if (!enabled()) GTEST_SKIP() << "set CRUCIBLE_EVAL_MEASURE=1 to measure";
  measure(test::bias_scale_relu_task(), "fused_bias_scale_relu");
}

}  // namespace
}  // namespace crucible::kernels
