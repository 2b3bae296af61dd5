// The linter on the new op classes, and on the CUDA suite at reduced sizes (its full sizes are made for an
// H200; this CPU would take tens of minutes). Reduction keeps every reduced dim (K, C*k*k, row length), so
// the tolerance check still sees the real accumulation lengths; only batch-like leading dims shrink.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>

#include <gtest/gtest.h>

#include "kernels/reference/task_linter.hpp"
#include "kernels/task/chain_shapes.hpp"
#include "kernels/task/task_loader.hpp"

namespace crucible::kernels {
namespace {

task_spec parse(const std::string& yaml) {
  auto t = parse_task_yaml(yaml, "lint_test.yaml");
  EXPECT_TRUE(t) << t.message();
  return t ? *t : task_spec{};
}

std::string problems(const lint_report& r) {
  std::string s;
  for (const auto& p : r.problems) s += "\n  " + p;
  return s;
}

bool has_problem(const lint_report& r, const std::string& part) {
  for (const auto& p : r.problems)
    if (p.find(part) != std::string::npos) return true;
  return false;
}

lint_options quick() {
  lint_options o;
  o.seeds = 3;
  o.timing_calls = 1;
  return o;
}

TEST(TaskLinterScalars, AcceptsALossThatVariesAcrossSeeds) {
  auto r = lint_task(parse(R"(
name: loss
inputs: [{name: x, shape: [64, 32], dist: heavy_tailed}, {name: t, shape: [64, 32]}]
ops: [{op: mse_loss, args: [t]}]
)"),
                     quick());
  EXPECT_TRUE(r.ok) << problems(r);
  EXPECT_GT(r.output_std, 0.0);
}

TEST(TaskLinterScalars, RejectsALossNearConstantAcrossSeeds) {
  // The mean of many squares concentrates on its expectation: writing 2.0 would pass.
  lint_options o = quick();
  o.min_relative_std = 0.05;  // the test's size concentrates to a few percent; the default is 1e-3
  auto r = lint_task(parse(R"(
name: loss
inputs: [{name: x, shape: [256, 512]}, {name: t, shape: [256, 512]}]
ops: [{op: mse_loss, args: [t]}]
)"),
                     o);
  EXPECT_TRUE(has_problem(r, "near-constant scalar output across seeds")) << problems(r);
}

TEST(TaskLinterScalars, ChannelNormAndPoolOutputsAreNotConstant) {
  auto r = lint_task(parse(R"(
name: conv_chain
inputs:
  - {name: x, shape: [2, 4, 12, 12]}
  - {name: W, shape: [8, 4, 3, 3], dist: uniform, lo: -0.16, hi: 0.16, param: true}
  - {name: w, shape: [8], dist: uniform, lo: 0.5, hi: 1.5, param: true}
  - {name: b, shape: [8], dist: uniform, lo: -0.1, hi: 0.1, param: true}
ops:
  - {op: conv2d, args: [W]}
  - {op: group_norm, args: [w, b], attrs: {groups: 2}}
  - {op: max_pool2d, attrs: {kernel: 2}}
  - hardswish
)"),
                     quick());
  EXPECT_TRUE(r.ok) << problems(r);
}

bool selected(const std::string& name, const std::string& parts) {
  size_t start = 0;
  while (start <= parts.size()) {
    const size_t end = std::min(parts.find(',', start), parts.size());
    const std::string part = parts.substr(start, end - start);
    if (!part.empty() && name.find(part) != std::string::npos) return true;
    start = end + 1;
  }
  return false;
}

// The task with batch-like leading dims shrunk: dim 0 of inputs[0], and of every non-parameter input that
// shares it, goes down until inputs[0] has at most `max_elems` elements.
task_spec reduced(const task_spec& task, int64_t max_elems) {
  task_spec t = task;
  const int64_t n0 = t.inputs[0].shape[0], total = numel(t.inputs[0].shape);
  if (total <= max_elems) return t;
  const int64_t n = std::max<int64_t>(1, n0 * max_elems / total);
  for (auto& in : t.inputs)
    if (&in == &t.inputs[0] || (!in.param && in.shape[0] == n0)) in.shape[0] = n;
  return infer_shapes(t) ? t : task;
}

// About 3 minutes on a 2-core machine, so opt-in: CRUCIBLE_LINT_CUDA=1 (CRUCIBLE_LINT_ONLY=a,b limits it to
// tasks whose names contain one of the comma-separated parts; CRUCIBLE_LINT_VERBOSE=1 prints each verdict).
TEST(CudaSuiteLint, EveryTaskLintsCleanAtReducedSize) {
  if (!std::getenv("CRUCIBLE_LINT_CUDA"))
    GTEST_SKIP() << "set CRUCIBLE_LINT_CUDA=1 to lint the CUDA suite at reduced sizes (several minutes)";
  auto suite = load_task_suite(default_task_dir() + "/cuda", "cuda");
  ASSERT_TRUE(suite) << suite.message();
  lint_options o;
  o.seeds = 3;
  o.timing_calls = 1;  // the CPU time says nothing about an H200; the README's model does
  const char* only = std::getenv("CRUCIBLE_LINT_ONLY");
  for (const auto& task : *suite) {
    if (only && !selected(task.name, only)) continue;
    const auto start = std::chrono::steady_clock::now();
    // CRUCIBLE_LINT_FULL=1: the shipped sizes (for the cheap tasks, e.g. the losses, with
    // CRUCIBLE_LINT_ONLY).
    auto r = lint_task(std::getenv("CRUCIBLE_LINT_FULL") ? task : reduced(task, int64_t{1} << 18), o);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_TRUE(r.ok) << task.name << problems(r);
    if (std::getenv("CRUCIBLE_LINT_VERBOSE"))
      std::cout << task.name << ": " << (r.ok ? "ok" : "PROBLEMS") << " tolerance use " << r.tolerance_use
                << " rel std " << r.output_std / (r.output_mean_abs + 1e-12) << " (" << s << " s)"
                << std::endl;
  }
}

}  // namespace
}  // namespace crucible::kernels
