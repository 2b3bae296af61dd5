// `crucible eval` as a user runs it: the real binary on hand-written candidates. Whatever the candidate does
// (compute, lie, crash, hang, cheat), the process itself exits normally with one JSON verdict.

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include "tests/cli/cli_support.hpp"

namespace {

crucible::test::command_result run(const std::string& args) {
  return crucible::test::run_command(std::string(CRUCIBLE_BINARY_DIR) + "/crucible " + args + " 2>/dev/null");
}

// Small, fast measurement settings; a short worker timeout so the infinite loop is cut quickly.
nlohmann::json eval(const std::string& candidate) {
  std::string data = CRUCIBLE_TEST_DATA_DIR;
  auto r = run("eval --json --tasks-dir " + data + "/tasks --task test_bias_scale_relu --candidate " + data +
               "/candidates/" + candidate +
               " --set benchmark.timeout_s=8 --set benchmark.buckets=3 --set benchmark.trials=2 "
               "--set benchmark.seeds=2 --set compiler.cache_dir=" +
               std::string(CRUCIBLE_BINARY_DIR) + "/test-eval-cache");
  EXPECT_EQ(r.exit_code, 0) << "crucible eval must exit normally whatever the candidate does\n" << r.out;
  try {
    return nlohmann::json::parse(r.out);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not one JSON object: " << e.what() << "\n" << r.out;
    return {};
  }
}

TEST(EvalCommand, CorrectCandidateGetsASpeedup) {
  auto j = eval("fused_bias_scale_relu.cpp");
  EXPECT_EQ(j["task"], "test_bias_scale_relu");
  EXPECT_EQ(j["target"], "cpu");
  EXPECT_TRUE(j["compiled"].get<bool>());
  EXPECT_TRUE(j["correct"].get<bool>());
  EXPECT_GT(j["speedup_vs_eager"].get<double>(), 0.0);
  EXPECT_EQ(j["verdict"]["outcome"], "pass");
  EXPECT_GT(j["times"]["eager_ms"].get<double>(), 0.0);
  EXPECT_GT(j["times"]["candidate_ms"].get<double>(), 0.0);
}

TEST(EvalCommand, WrongCandidateIsIncorrect) {
  auto j = eval("wrong_scale.cpp");
  EXPECT_TRUE(j["compiled"].get<bool>());
  EXPECT_FALSE(j["correct"].get<bool>());
  EXPECT_EQ(j["verdict"]["outcome"], "incorrect");
}

TEST(EvalCommand, SegfaultIsACrashVerdict) {
  auto j = eval("segfault.cpp");
  EXPECT_EQ(j["verdict"]["outcome"], "crash");
  EXPECT_NE(j["error"].get<std::string>().find("SIGSEGV"), std::string::npos) << j.dump();
}

TEST(EvalCommand, InfiniteLoopIsATimeoutVerdict) {
  auto j = eval("infinite_loop.cpp");
  EXPECT_EQ(j["verdict"]["outcome"], "timeout");
}

TEST(EvalCommand, InputMutationIsFlagged) {
  auto j = eval("mutate_input.cpp");
  EXPECT_EQ(j["verdict"]["outcome"], "hack");
  bool flagged = false;
  for (const auto& f : j["verdict"]["flags"]) flagged |= f.get<std::string>().rfind("input_mutated", 0) == 0;
  EXPECT_TRUE(flagged) << j.dump();
  EXPECT_LT(j["verdict"]["reward"].get<double>(), 0.0);
}

TEST(EvalCommand, UsageErrorsExitNonZero) {
  EXPECT_EQ(run("eval --task no_such_task --candidate /dev/null").exit_code, 2);
  EXPECT_EQ(run("eval --task bias_gelu --candidate /no/such/file.cpp").exit_code, 2);
  EXPECT_NE(run("eval --candidate x.cpp").exit_code, 0);  // --task is required
  EXPECT_EQ(run("train --set grpo.lrr=1").exit_code, 2);
}

TEST(TasksCommand, ListsTheSuite) {
  auto r = run("tasks");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("gemm_bias_scale_row_sum"), std::string::npos);
  EXPECT_NE(r.out.find("tasks for target cpu"), std::string::npos);
}

// A KernelBench checkout's problems with their inputs, output and eager time; a broken one is a row with its
// error and makes the exit status 1.
TEST(TasksCommand, ListsKernelBenchProblems) {
  const std::string data = CRUCIBLE_TEST_DATA_DIR;
  auto probe =
      crucible::test::run_command(std::string(CRUCIBLE_BINARY_DIR) + "/crucible tasks --kernelbench " + data +
                                  "/kernelbench --level 1 --device cpu --runs 1 2>&1");
  if (probe.out.find("no KernelBench support") != std::string::npos) GTEST_SKIP() << "built without Python";
  auto r = run("tasks --kernelbench " + data + "/kernelbench --device cpu --runs 2");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("| kb1_1_Small_matmul | float32 [16, 24], float32 [24, 8] | float32 [16, 8] |"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("kb2_7_Linear_gelu"), std::string::npos);
  EXPECT_NE(r.out.find("3 KernelBench problems"), std::string::npos);
  auto level = run("tasks --kernelbench " + data + "/kernelbench --level 2 --device cpu --runs 1");
  EXPECT_EQ(level.out.find("kb1_1"), std::string::npos) << level.out;
  auto broken = run("tasks --kernelbench " + data + "/kernelbench_bad --device cpu --runs 1");
  EXPECT_EQ(broken.exit_code, 1);
  EXPECT_NE(broken.out.find("| kb1_1_Syntax_error | error: 1_Syntax_error.py: SyntaxError"),
            std::string::npos)
      << broken.out;
  EXPECT_NE(broken.out.find("5 failed"), std::string::npos);
  EXPECT_EQ(run("tasks --kernelbench " + data + "/tasks").exit_code, 2);
}

// The linter on modules: a problem whose output is the same for every input (softmax rows summed: ones) is
// flagged, a sound one is not. The degenerate problem is written here, beside a copy of a sound one.
TEST(TasksCommand, LintsKernelBenchProblemsOnTheirOutputs) {
  namespace fs = std::filesystem;
  const std::string data = CRUCIBLE_TEST_DATA_DIR;
  const fs::path dir = fs::temp_directory_path() / ("crucible-kb-lint-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "level1");
  fs::copy_file(data + "/kernelbench/KernelBench/level1/2_Scaled_relu.py",
                dir / "level1" / "2_Scaled_relu.py");
  std::ofstream(dir / "level1" / "1_Softmax_sum.py") << "import torch\n"
                                                        "class Model(torch.nn.Module):\n"
                                                        "    def forward(self, x):\n"
                                                        "        return torch.softmax(x, dim=1).sum(dim=1)\n"
                                                        "def get_inputs():\n"
                                                        "    return [torch.randn(8, 32)]\n"
                                                        "def get_init_inputs():\n"
                                                        "    return []\n";
  // An integer output (an argmax) is read as integers, not as the bytes of a float.
  std::ofstream(dir / "level1" / "3_Argmax.py") << "import torch\n"
                                                   "class Model(torch.nn.Module):\n"
                                                   "    def forward(self, x):\n"
                                                   "        return torch.argmax(x, dim=1)\n"
                                                   "def get_inputs():\n"
                                                   "    return [torch.randn(8, 32)]\n"
                                                   "def get_init_inputs():\n"
                                                   "    return []\n";
  auto r = run("tasks --kernelbench " + dir.string() + " --lint --device cpu --runs 1");
  if (r.out.find("no KernelBench support") != std::string::npos) GTEST_SKIP() << "built without Python";
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("| kb1_2_Scaled_relu | float32 [4, 64] | float32 [4, 64] |"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(" | ok |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kb1_1_Softmax_sum: near-constant output"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kb1_1_Softmax_sum: output does not depend on the inputs"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("kb1_2_Scaled_relu: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| int64 [8] |"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("kb1_3_Argmax: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 with lint problems"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

// A KernelBench problem file as the task, a ModelNew file as the candidate: the same protocol and verdicts,
// as text and as JSON.
TEST(EvalCommand, EvaluatesAKernelBenchCandidate) {
  const std::string data = std::string(CRUCIBLE_TEST_DATA_DIR) + "/kernelbench";
  const std::string problem = data + "/KernelBench/level2/7_Linear_gelu.py";
  auto r = run("eval --kernelbench " + problem + " --candidate " + data + "/solutions/7_Linear_gelu_new.py");
  if (r.out.find("no KernelBench support") != std::string::npos) GTEST_SKIP() << "built without Python";
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("verdict    pass"), std::string::npos) << r.out;
  auto j = run("eval --json --kernelbench " + data + "/KernelBench/level1/2_Scaled_relu.py --candidate " +
               data + "/candidates/scaled_relu_in_place.py");
  EXPECT_EQ(j.exit_code, 0) << j.out;
  EXPECT_NE(j.out.find("\"outcome\": \"hack\""), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("input_mutated:x"), std::string::npos) << j.out;
  EXPECT_EQ(run("eval --candidate " + problem).exit_code, 2);
  EXPECT_NE(run("eval --task t --kernelbench " + problem + " --candidate " + problem).exit_code, 0);
}

}  // namespace
