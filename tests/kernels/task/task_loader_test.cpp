#include "kernels/task/task_loader.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include <unistd.h>

#include <gtest/gtest.h>

#include "kernels/task/chain_shapes.hpp"

namespace crucible::kernels {
namespace {

namespace fs = std::filesystem;

const char* const valid_task = R"(
name: gemm_bias_relu
family: gemm
description: relu(x @ W + b)
inputs:
  - {name: x, shape: [4, 8], dist: normal}
  - {name: W, shape: [8, 6], dist: uniform, lo: -0.05, hi: 0.05, param: true}
  - {name: b, shape: [6], dist: uniform, lo: -0.1, hi: 0.1, param: true}
ops:
  - {op: matmul, args: [W]}
  - {op: add, args: b}
  - relu
  - {op: clamp, attrs: {lo: -1, hi: 1e1}}
tolerance: {atol: 1e-3, rtol: 2e-4}
)";

/// The valid task with `from` replaced by `to` (the test fails if `from` is not there).
std::string edited(const std::string& from, const std::string& to) {
  std::string text = valid_task;
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

/// Parses `text` expecting an error that contains every one of `parts`.
void expect_error(const std::string& text, std::initializer_list<std::string> parts) {
  auto t = parse_task_yaml(text, "t.yaml");
  ASSERT_FALSE(t) << "parsed although it should not:\n" << text;
  EXPECT_EQ(t.message().rfind("t.yaml:", 0), 0u) << t.message();
  for (const auto& p : parts)
    EXPECT_NE(t.message().find(p), std::string::npos) << "'" << p << "' not in: " << t.message();
}

TEST(TaskLoader, ParsesEveryField) {
  auto t = parse_task_yaml(valid_task, "t.yaml");
  ASSERT_TRUE(t) << t.message();
  EXPECT_EQ(t->name, "gemm_bias_relu");
  EXPECT_EQ(t->family, "gemm");
  EXPECT_EQ(t->description, "relu(x @ W + b)");
  ASSERT_EQ(t->inputs.size(), 3u);
  EXPECT_EQ(t->inputs[1].name, "W");
  EXPECT_EQ(t->inputs[1].shape, (std::vector<int64_t>{8, 6}));
  EXPECT_EQ(t->inputs[1].dist, "uniform");
  EXPECT_DOUBLE_EQ(t->inputs[1].lo, -0.05);
  EXPECT_DOUBLE_EQ(t->inputs[1].hi, 0.05);
  EXPECT_TRUE(t->inputs[1].param);
  EXPECT_FALSE(t->inputs[0].param);
  EXPECT_EQ(t->inputs[0].dtype, "float32");
  ASSERT_EQ(t->ops.size(), 4u);
  EXPECT_EQ(t->ops[0].op, "matmul");
  EXPECT_EQ(t->ops[0].args, std::vector<std::string>{"W"});
  EXPECT_EQ(t->ops[1].args, std::vector<std::string>{"b"});  // a single name needs no brackets
  EXPECT_EQ(t->ops[2].op, "relu");                           // shorthand
  EXPECT_TRUE(t->ops[2].args.empty());
  EXPECT_DOUBLE_EQ(t->ops[3].attrs.at("lo"), -1.0);
  EXPECT_DOUBLE_EQ(t->ops[3].attrs.at("hi"), 10.0);
  EXPECT_DOUBLE_EQ(t->atol, 1e-3);
  EXPECT_DOUBLE_EQ(t->rtol, 2e-4);
  EXPECT_EQ(t->targets, std::vector<std::string>{"cpu"});  // the default
}

TEST(TaskLoader, OptionalFieldsDefault) {
  auto t =
      parse_task_yaml("name: t\ninputs: [{name: x, shape: [2, 3]}]\nops: [softmax]\ntargets: [cpu, cuda]\n");
  ASSERT_TRUE(t) << t.message();
  EXPECT_LT(t->atol, 0);  // the dtype's default applies
  EXPECT_DOUBLE_EQ(task_atol(*t), 1e-4);
  EXPECT_EQ(t->inputs[0].dist, "normal");
  EXPECT_DOUBLE_EQ(t->inputs[0].scale, 1.0);
  EXPECT_EQ(t->targets, (std::vector<std::string>{"cpu", "cuda"}));
}

TEST(TaskLoader, UnknownOpNamesItsPath) {
  expect_error(edited("  - relu\n", "  - rleu\n"), {"ops[2]", "unknown op 'rleu'", "relu"});
  expect_error(edited("{op: matmul,", "{op: matmull,"), {"ops[0].op", "unknown op 'matmull'"});
}

TEST(TaskLoader, BadShapeNamesItsPath) {
  expect_error(edited("shape: [4, 8]", "shape: [4, -8]"), {"inputs[0].shape[1]", "positive integer"});
  expect_error(edited("shape: [4, 8]", "shape: [4, 8.5]"), {"inputs[0].shape[1]", "expected an integer"});
  expect_error(edited("shape: [4, 8]", "shape: 4"), {"inputs[0].shape", "expected a list"});
  expect_error(edited("shape: [4, 8]", "shape: []"), {"inputs[0].shape", "1 to 8"});
  // Shapes that do not fit the chain are caught by shape inference, naming the op.
  expect_error(edited("shape: [8, 6]", "shape: [7, 6]"), {"ops[0] (matmul)", "[8, N]"});
  expect_error(edited("shape: [6]", "shape: [5]"), {"ops[1] (add)", "'b'"});
}

TEST(TaskLoader, MissingRequiredAttrNamesItsPath) {
  expect_error(edited("attrs: {lo: -1, hi: 1e1}", "attrs: {lo: -1}"),
               {"ops[3].attrs.hi", "required by clamp"});
  expect_error(edited("{op: clamp, attrs: {lo: -1, hi: 1e1}}", "clamp"), {"ops[3].attrs.lo", "required"});
  expect_error(edited("{op: matmul, args: [W]}", "matmul"), {"ops[0].args", "matmul takes 1 side input"});
}

TEST(TaskLoader, WrongTypeNamesItsPath) {
  expect_error(edited("hi: 1e1", "hi: lots"), {"ops[3].attrs.hi: expected a number", "'lots'"});
  expect_error(edited("hi: 1e1", "hi: [1]"), {"ops[3].attrs.hi: expected a number"});
  expect_error(edited("param: true}\n  - {name: b", "param: maybe}\n  - {name: b"),
               {"inputs[1].param: expected true or false"});
  expect_error(edited("name: gemm_bias_relu", "name: [a, b]"), {"name: expected a string"});
  expect_error(edited("atol: 1e-3", "atol: tight"), {"tolerance.atol: expected a number"});
  expect_error(edited("lo: -0.05, hi: 0.05", "lo: 0.05, hi: -0.05"), {"inputs[1].lo", "lo < hi"});
  expect_error(edited("dist: normal", "dist: gaussian"), {"inputs[0].dist", "gaussian"});
  expect_error(edited("{name: x,", "{dtype: float8, name: x,"), {"inputs[0].dtype", "float8"});
}

TEST(TaskLoader, UnknownKeysAreErrors) {
  expect_error(edited("tolerance:", "tolerence:"), {"tolerence: unknown key", "tolerance"});
  expect_error(edited("dist: normal", "dsit: normal"), {"inputs[0].dsit: unknown key"});
  expect_error(edited("{op: matmul, args: [W]}", "{op: matmul, arg: [W]}"), {"ops[0].arg: unknown key"});
  expect_error(edited("attrs: {lo: -1, hi: 1e1}", "attrs: {lo: -1, hi: 1e1, mid: 0}"),
               {"ops[3].attrs.mid: unknown key"});
  expect_error(edited("  - relu\n", "  - {op: relu, attrs: {alpha: 1}}\n"),
               {"ops[2].attrs", "takes no attributes"});
  expect_error(edited("atol: 1e-3", "atol: 1e-3, eps: 1"), {"tolerance.eps: unknown key"});
  expect_error(edited("family: gemm", "family: gemm\nfamily: gemm"), {"family: duplicate key"});
}

TEST(TaskLoader, ReferencesAndNamesAreChecked) {
  expect_error(edited("{op: add, args: b}", "{op: add, args: [bias]}"), {"ops[1].args[0]", "'bias'"});
  expect_error(edited("{op: add, args: b}", "{op: add, args: [x]}"), {"ops[1].args[0]", "inputs[0]"});
  expect_error(edited("{name: b,", "{name: W,"), {"inputs[2].name", "duplicate input name 'W'"});
  expect_error(std::string(valid_task) + "targets: [tpu]\n", {"targets[0]", "tpu"});
}

TEST(TaskLoader, MissingSectionsAndBadYaml) {
  expect_error("name: t\nops: [relu]\n", {"inputs", "required"});
  expect_error("name: t\ninputs: [{name: x, shape: [2, 2]}]\n", {"ops", "required"});
  expect_error("inputs: [{name: x, shape: [2, 2]}]\nops: [relu]\n", {"name", "required"});
  expect_error("- just\n- a list\n", {"expected a map"});
  expect_error("name: t\ninputs: [{name: x, shape: [2, 2]}\nops: [relu]\n", {"not valid YAML"});
  expect_error("name: t\ninputs: [{name: x, shape: [4]}]\nops: [row_sum]\n",
               {"ops[0] (row_sum)", "rank >= 2"});
}

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("crucible_task_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  void write(const std::string& rel, const std::string& text) const {
    fs::create_directories((path_ / rel).parent_path());
    std::ofstream(path_ / rel) << text;
  }
  std::string str() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

std::string small_task(const std::string& name, const std::string& targets = "[cpu]") {
  return "name: " + name + "\ninputs: [{name: x, shape: [2, 3]}]\nops: [relu]\ntargets: " + targets + "\n";
}

TEST(TaskSuite, LoadsSortedAndFiltersByTarget) {
  TempDir dir;
  dir.write("b.yaml", small_task("b"));
  dir.write("sub/a.yaml", small_task("a", "[cpu, cuda]"));
  dir.write("c.yaml", small_task("c", "[cuda]"));
  dir.write("notes.txt", "not a task");
  auto all = load_task_suite(dir.str());
  ASSERT_TRUE(all) << all.message();
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].name, "a");
  EXPECT_EQ((*all)[2].name, "c");
  auto cpu = load_task_suite(dir.str(), "cpu");
  ASSERT_TRUE(cpu) << cpu.message();
  ASSERT_EQ(cpu->size(), 2u);
  EXPECT_EQ((*cpu)[1].name, "b");
}

TEST(TaskSuite, DuplicateNamesAreErrors) {
  TempDir dir;
  dir.write("one/x.yaml", small_task("x"));
  dir.write("two/x.yaml", small_task("x"));
  auto s = load_task_suite(dir.str());
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("duplicate task name 'x'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("name"), std::string::npos) << s.message();
}

TEST(TaskSuite, FileNameMustMatchTaskName) {
  TempDir dir;
  dir.write("x.yaml", small_task("y"));
  auto s = load_task_suite(dir.str());
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("x.yaml: name: 'y' must match the file name"), std::string::npos) << s.message();
}

TEST(TaskSuite, ErrorsNameTheFile) {
  TempDir dir;
  dir.write("bad.yaml",
            "name: bad\ninputs: [{name: x, shape: [2, 3]}]\nops: [{op: mul_scalar, attrs: {s: x}}]\n");
  auto s = load_task_suite(dir.str());
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "bad.yaml: ops[0].attrs.s: expected a number (got 'x')");
  EXPECT_FALSE(load_task_file(dir.str() + "/missing.yaml"));
  EXPECT_FALSE(load_task_suite(dir.str() + "/nowhere"));
}

TEST(ShippedSuite, EveryTaskLoadsAndCoversTheFamilies) {
  auto suite = load_task_suite(default_task_dir(), "cpu");
  ASSERT_TRUE(suite) << suite.message();
  EXPECT_GE(suite->size(), 14u);
  std::set<std::string> families, ops;
  bool gemm_then_row_reduce = false;
  for (const auto& t : *suite) {
    SCOPED_TRACE(t.name);
    EXPECT_FALSE(t.description.empty());
    ASSERT_TRUE(infer_shapes(t));
    for (const auto& in : t.inputs) EXPECT_EQ(in.dtype, "float32");
    families.insert(t.family);
    for (size_t i = 0; i < t.ops.size(); ++i) {
      ops.insert(t.ops[i].op);
      if (t.ops[i].op == "matmul")
        for (size_t j = i + 1; j < t.ops.size(); ++j)
          gemm_then_row_reduce |= t.ops[j].op == "row_sum" || t.ops[j].op == "row_mean";
    }
  }
  for (const char* f : {"elementwise", "reduction", "softmax", "norm", "gemm"})
    EXPECT_TRUE(families.count(f)) << f;
  for (const char* op :
       {"gelu", "tanh", "sigmoid", "exp", "softplus", "row_sum", "row_mean", "row_max", "softmax",
        "log_softmax", "layer_norm", "rms_norm", "matmul", "add", "mul", "mul_scalar"})
    EXPECT_TRUE(ops.count(op)) << op;
  EXPECT_TRUE(gemm_then_row_reduce) << "the suite must hold the sum-over-GEMM rewrite's task";
}

}  // namespace
}  // namespace crucible::kernels
