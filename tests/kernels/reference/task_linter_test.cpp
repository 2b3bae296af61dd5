#include "kernels/reference/task_linter.hpp"

#include <iostream>

#include <gtest/gtest.h>

#include "kernels/task/task_loader.hpp"

namespace crucible::kernels {
namespace {

task_spec parse(const std::string& yaml) {
  auto t = parse_task_yaml(yaml, "lint_test.yaml");
  EXPECT_TRUE(t) << t.message();
  return t ? *t : task_spec{};
}

bool has_problem(const lint_report& r, const std::string& part) {
  for (const auto& p : r.problems)
    if (p.find(part) != std::string::npos) return true;
  return false;
}

std::string problems(const lint_report& r) {
  std::string s;
  for (const auto& p : r.problems) s += "\n  " + p;
  return s;
}

lint_options quick() {
  lint_options o;
  o.seeds = 2;
  o.timing_calls = 1;
  return o;
}

TEST(TaskLinter, AcceptsAHealthyTask) {
  auto r = lint_task(parse(R"(
name: ok
inputs: [{name: x, shape: [64, 128]}]
ops: [gelu, softmax]
)"),
                     quick());
  EXPECT_TRUE(r.ok) << problems(r);
  EXPECT_GT(r.eager_ms, 0.0);
  EXPECT_GT(r.output_std, 0.0);
  EXPECT_GT(r.output_mean_abs, 0.0);
  EXPECT_LT(r.tolerance_use, 0.5);
}

TEST(TaskLinter, RejectsNearConstantOutputs) {
  // relu(-|x|) is zero everywhere: a kernel writing zeros would pass.
  auto zeros =
      lint_task(parse("name: z\ninputs: [{name: x, shape: [32, 64]}]\nops: [abs, neg, relu]\n"), quick());
  EXPECT_FALSE(zeros.ok);
  EXPECT_TRUE(has_problem(zeros, "near-constant")) << problems(zeros);
  EXPECT_TRUE(has_problem(zeros, "all zeros")) << problems(zeros);
  // x * 0 + 3: constant but not zero.
  auto three = lint_task(parse(R"(
name: three
inputs: [{name: x, shape: [32, 64]}]
ops: [{op: mul_scalar, attrs: {s: 0}}, {op: add_scalar, attrs: {s: 3}}]
)"),
                         quick());
  EXPECT_TRUE(has_problem(three, "near-constant")) << problems(three);
  EXPECT_FALSE(has_problem(three, "all zeros")) << problems(three);
  // softmax then row_sum is 1 in every row, up to rounding.
  auto ones = lint_task(parse("name: ones\ninputs: [{name: x, shape: [32, 64]}]\nops: [softmax, row_sum]\n"),
                        quick());
  EXPECT_TRUE(has_problem(ones, "near-constant")) << problems(ones);
}

TEST(TaskLinter, RejectsInputIndependentOutputs) {
  // x * 0 + b varies along the row (b is a parameter) but ignores the activation x.
  auto r = lint_task(parse(R"(
name: bias_only
inputs:
  - {name: x, shape: [32, 64]}
  - {name: b, shape: [64], param: true}
ops: [{op: mul_scalar, attrs: {s: 0}}, {op: add, args: [b]}]
)"),
                     quick());
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(has_problem(r, "does not depend on the activations")) << problems(r);
  EXPECT_FALSE(has_problem(r, "near-constant")) << problems(r);
}

TEST(TaskLinter, RejectsNonFiniteOutputs) {
  // exp overflows on heavy-tailed inputs (values up to 1e3; about 1 in 15000 beyond 88).
  auto r = lint_task(parse("name: e\ninputs: [{name: x, shape: [256, 256]}]\nops: [exp]\n"), quick());
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(has_problem(r, "non-finite output")) << problems(r);
  EXPECT_TRUE(has_problem(r, "heavy-tailed")) << problems(r);
  // Bounded first, it is fine.
  auto ok = lint_task(parse("name: e\ninputs: [{name: x, shape: [32, 64]}]\nops: [tanh, exp]\n"), quick());
  EXPECT_TRUE(ok.ok) << problems(ok);
}

TEST(TaskLinter, RejectsTooFastAndTooTight) {
  lint_options o = quick();
  o.min_eager_ms = 1e4;
  auto fast = lint_task(parse("name: f\ninputs: [{name: x, shape: [8, 8]}]\nops: [tanh]\n"), o);
  EXPECT_TRUE(has_problem(fast, "below min_eager_ms")) << problems(fast);
  // A long sum in float32 cannot meet 1e-9.
  auto tight = lint_task(parse(R"(
name: t
inputs: [{name: x, shape: [16, 4096]}]
ops: [row_sum]
tolerance: {atol: 1e-9, rtol: 1e-9}
)"),
                         quick());
  EXPECT_TRUE(has_problem(tight, "tolerance too tight")) << problems(tight);
  EXPECT_GT(tight.tolerance_use, 1.0);
}

TEST(TaskLinter, ReportsAnInvalidTask) {
  task_spec t;
  t.name = "empty";
  auto r = lint_task(t, quick());
  EXPECT_FALSE(r.ok);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_NE(r.problems[0].find("inputs"), std::string::npos);
}

TEST(TaskTable, ListsEveryTaskWithItsVerdict) {
  auto a = parse("name: alpha\nfamily: softmax\ninputs: [{name: x, shape: [4, 8]}]\nops: [softmax]\n");
  lint_report ok{"alpha", true, {}, 1.234, 0, 0, 0};
  lint_report bad{"beta", false, {"near-constant output"}, 0.5, 0, 0, 0};
  const std::string table = format_task_table({ok, bad}, {a});
  EXPECT_NE(table.find("task"), std::string::npos);
  EXPECT_NE(table.find("eager ms"), std::string::npos);
  EXPECT_NE(table.find("alpha"), std::string::npos);
  EXPECT_NE(table.find("[4, 8] -> [4, 8]"), std::string::npos) << table;
  EXPECT_NE(table.find("1.23"), std::string::npos);
  EXPECT_NE(table.find("1 problem(s)"), std::string::npos);
  EXPECT_NE(table.find("beta: near-constant output"), std::string::npos) << table;
}

TEST(ShippedSuite, EveryTaskLintsClean) {
  auto suite = load_task_suite(default_task_dir(), "cpu");
  ASSERT_TRUE(suite) << suite.message();
  std::vector<lint_report> reports;
  for (const auto& t : *suite) {
    reports.push_back(lint_task(t));
    EXPECT_TRUE(reports.back().ok) << t.name << problems(reports.back());
  }
  std::cout << format_task_table(reports, *suite);
}

}  // namespace
}  // namespace crucible::kernels
