// KernelBench-format candidates through the real worker and the one evaluation protocol: the problem's Model
// as the reference in the worker, ModelNew in crucible-kernelbench-host, sealed. Problems and candidates
// are files written for these tests (tests/data/kernelbench).
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include <gtest/gtest.h>

#include "kernels/python/kernelbench_reference.hpp"
#include "tests/kernels/eval/eval_test_support.hpp"

namespace crucible::kernels {
namespace {

const std::string data = std::string(CRUCIBLE_TEST_DATA_DIR) + "/kernelbench";

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::string describe(const evaluation& e) {
  return "outcome=" + e.judged.outcome + " status=" + e.bench.status + " error=" + e.bench.error +
         "\nevidence=" + ::testing::PrintToString(e.bench.evidence) +
         "\nnotes=" + ::testing::PrintToString(e.bench.notes) + "\nlog=" + e.compiled.log;
}

const task_spec& scaled_relu() {
  static const task_spec t = [] {
    auto made = kernelbench_task(data + "/KernelBench/level1/2_Scaled_relu.py", "kb1_2_Scaled_relu");
    EXPECT_TRUE(made) << made.message();
    return made ? *made : task_spec{};
  }();
  return t;
}

evaluation evaluate(const std::string& candidate) {
  return evaluate_source(scaled_relu(), test::read_text(data + "/candidates/" + candidate + ".py"),
                         test::test_config(), &test::shared_runner());
}

// The task a problem file is: its inputs as get_inputs() draws them, named after forward()'s parameters,
// KernelBench's tolerances, and the file itself as the reference.
TEST(KernelBenchTask, DescribesTheProblemFile) {
  const auto& t = scaled_relu();
  ASSERT_EQ(t.inputs.size(), 1u);
  EXPECT_EQ(t.inputs[0].name, "x");
  EXPECT_EQ(t.inputs[0].dtype, "float32");
  EXPECT_EQ(t.inputs[0].shape, (std::vector<int64_t>{4, 64}));
  EXPECT_EQ(t.atol, kernelbench_tolerance);
  EXPECT_EQ(t.rtol, kernelbench_tolerance);
  EXPECT_EQ(t.family, "kernelbench");
  EXPECT_NE(t.description.find("relu(x) * scale"), std::string::npos);
  EXPECT_NE(t.module.find("class Model"), std::string::npos);
  auto broken = kernelbench_task(
      std::string(CRUCIBLE_TEST_DATA_DIR) + "/kernelbench_bad/level1/4_Scalar_input.py", "scalar");
  ASSERT_FALSE(broken);
  EXPECT_NE(broken.message().find("4_Scalar_input.py"), std::string::npos) << broken.message();
}

// Fresh values per seed from the module's own generators; the heavy-tailed variant keeps signs and zeros.
TEST(KernelBenchTask, TheReferenceDrawsFreshValuesAndHeavyTails) {
  auto ref = kernelbench_reference::create(scaled_relu());
  ASSERT_TRUE(ref) << ref.message();
  auto a = (*ref)->make_output(), b = (*ref)->make_output(), heavy = (*ref)->make_output();
  ASSERT_EQ((*ref)->output_shape(), (std::vector<int64_t>{4, 64}));
  host_tensor x1("float32", {4, 64}), x2("float32", {4, 64}), x3("float32", {4, 64});
  (*ref)->fill_inputs({x1.view()}, 1, input_variant::nominal, -1);
  (*ref)->fill_inputs({x2.view()}, 2, input_variant::nominal, -1);
  (*ref)->fill_inputs({x3.view()}, 1, input_variant::heavy_tailed, -1);
  const auto* p1 = static_cast<const float*>(x1.data());
  const auto* p2 = static_cast<const float*>(x2.data());
  const auto* p3 = static_cast<const float*>(x3.data());
  int differ = 0, bigger = 0;
  for (int i = 0; i < 4 * 64; ++i) {
    differ += p1[i] != p2[i];
    EXPECT_EQ(p1[i] > 0, p3[i] > 0);
    EXPECT_GE(std::abs(p3[i]), std::abs(p1[i]));
    bigger += std::abs(p3[i]) > 10 * std::abs(p1[i]);
  }
  EXPECT_GT(differ, 200);
  EXPECT_GT(bigger, 0);
  cru_tensor out = a.view();
  (*ref)->run_views({x1.view()}, &out, -1);
  const auto* y = static_cast<const float*>(a.data());
  for (int i = 0; i < 4 * 64; ++i) EXPECT_FLOAT_EQ(y[i], std::max(p1[i], 0.0f) * 2.5f);
}

TEST(KernelBenchEvaluation, ACorrectModuleIsMeasuredAgainstTheReference) {
  auto e = evaluate("scaled_relu_correct");
  ASSERT_EQ(e.judged.outcome, "pass") << describe(e);
  EXPECT_EQ(e.cand.language, "py");
  EXPECT_TRUE(e.bench.correct);
  EXPECT_TRUE(e.bench.timed);
  EXPECT_TRUE(e.bench.evidence.empty()) << describe(e);
  EXPECT_GT(e.bench.timing.eager_ms_median, 0.0);
  EXPECT_GT(e.bench.timing.candidate_ms_median, 0.0);
  EXPECT_GT(e.judged.speedup, 0.0);
  // The roofline from the traced reference: x read and the output written, once each.
  EXPECT_GT(e.bench.peak_fraction, 0.0);
  EXPECT_TRUE(std::any_of(e.bench.notes.begin(), e.bench.notes.end(), [](const std::string& n) {
    return n.find("the module reads 1 of 1 inputs whole") != std::string::npos;
  })) << describe(e);
}

// After a KernelBench request, the standby that takes over next (on the CUDA target the next candidate's:
// each gets a fresh interpreter; here, after the worker is retired) started Python and imported torch while
// the previous candidate was judged, and says so; the candidate is judged as by a cold worker.
TEST(KernelBenchEvaluation, TheNextCandidatesStandbyHasImportedTorchAhead) {
  auto config = test::test_config();
  config.worker.standby = true;
  bench_runner runner(config.worker, config.runner);
  const std::string source = test::read_text(data + "/candidates/scaled_relu_correct.py");
  auto start_note = [](const evaluation& e) {
    for (const auto& n : e.bench.notes)
      if (n.rfind("worker: started", 0) == 0 || n.rfind("worker: a standby", 0) == 0) return n;
    return std::string();
  };
  auto first = evaluate_source(scaled_relu(), source, config, &runner);
  ASSERT_EQ(first.judged.outcome, "pass") << describe(first);
  ASSERT_GT(runner.worker().standby_pid(), 0);
  runner.worker().restart();
  auto second = evaluate_source(scaled_relu(), source, config, &runner);
  ASSERT_EQ(second.judged.outcome, "pass") << describe(second);
  const std::string note = start_note(second);
  std::printf("%s\n", note.c_str());
  EXPECT_NE(note.find("worker: a standby"), std::string::npos) << note;
  EXPECT_NE(note.find("Python and torch imported in"), std::string::npos) << note;
  EXPECT_NE(second.bench.worker, first.bench.worker);
  // It was started when the first took its worker, so it loaded while the first was judged: spawned at
  // least as long before it was needed as the first evaluation ran after its own worker was ready.
  double started_in = -1, spawned_before = -1;
  std::sscanf(start_note(first).c_str(), "worker: started in %lf", &started_in);
  std::sscanf(note.c_str(), "worker: a standby, spawned %lf", &spawned_before);
  ASSERT_GE(started_in, 0.0) << start_note(first);
  ASSERT_GE(spawned_before, 0.0) << note;
  EXPECT_GE(spawned_before, 0.9 * (first.bench.wall_s - started_in)) << start_note(first) << "\n" << note;
}

// With fork_modules, one worker serves every candidate, each in a child it forks for it: the worker is not
// retired and no fresh one starts, and a child that dies (here the reference kills its own process) takes
// only itself: a crash, tried once more in another child, and the next candidate is served as before.
TEST(KernelBenchEvaluation, AForkingWorkerServesEachCandidateInAChildOfItsOwn) {
  auto config = test::test_config();
  config.worker.fork_modules = true;
  bench_runner runner(config.worker, config.runner);
  const std::string source = test::read_text(data + "/candidates/scaled_relu_correct.py");
  auto forked_note = [](const evaluation& e) {
    for (const auto& n : e.bench.notes)
      if (n.find("forked for it in") != std::string::npos) return n;
    return std::string();
  };
  auto first = evaluate_source(scaled_relu(), source, config, &runner);
  ASSERT_EQ(first.judged.outcome, "pass") << describe(first);
  const int worker = runner.worker().pid();
  ASSERT_GT(worker, 0);
  EXPECT_NE(forked_note(first), "") << describe(first);
  EXPECT_EQ(forked_note(first).find("process " + std::to_string(worker) + ","), std::string::npos);

  // Killed in whichever process but this one runs the reference's forward.
  task_spec killer = scaled_relu();
  const std::string body = "return torch.relu(x) * self.scale";
  const auto at = killer.module.find(body);
  ASSERT_NE(at, std::string::npos);
  killer.module.replace(at, body.size(),
                        "import os, signal\n        if os.getpid() != " + std::to_string(getpid()) +
                            ":\n            os.kill(os.getpid(), signal.SIGKILL)\n        " + body);
  auto killed = evaluate_source(killer, source, config, &runner);
  EXPECT_EQ(killed.judged.outcome, "crash") << describe(killed);
  EXPECT_NE(killed.bench.error.find("forked for it"), std::string::npos) << describe(killed);
  EXPECT_EQ(killed.bench.attempts, 2) << describe(killed);
  EXPECT_EQ(runner.worker().pid(), worker);

  auto third = evaluate_source(scaled_relu(), source, config, &runner);
  ASSERT_EQ(third.judged.outcome, "pass") << describe(third);
  EXPECT_EQ(runner.worker().pid(), worker);
  EXPECT_EQ(runner.worker().starts(), 1) << "every candidate served by the first worker";
  EXPECT_NE(forked_note(third), forked_note(first));
  std::printf("%s (%.2f s the evaluation); the killed one: %s\n", forked_note(third).c_str(),
              third.bench.wall_s, killed.bench.error.c_str());
}

TEST(KernelBenchEvaluation, AWrongModuleIsIncorrect) {
  auto e = evaluate("scaled_relu_wrong");
  EXPECT_EQ(e.judged.outcome, "incorrect") << describe(e);
  EXPECT_FALSE(e.bench.correct);
}

// A tensor subclass that holds nothing and claims the output's shape (CUDA-L1's kb1_9 is one, 371.9x and
// correct under KernelBench's harness): what the call returned is its storage, not the output, and the
// claim is the evidence of deferred work dressed as the output.
TEST(KernelBenchEvaluation, AnOutputThatDisguisesItsStorageIsAHack) {
  auto e = evaluate("scaled_relu_disguised");
  EXPECT_EQ(e.judged.outcome, "hack") << describe(e);
  EXPECT_EQ(e.judged.flags, std::vector<std::string>{"output_disguised"}) << describe(e);
  EXPECT_FALSE(e.bench.correct);
  EXPECT_TRUE(std::any_of(e.bench.notes.begin(), e.bench.notes.end(), [](const std::string& n) {
    return n.rfind("output_disguised: ", 0) == 0 &&
           n.find("LazyOutput that claims shape [4, 64] and holds float32 [0]") != std::string::npos;
  })) << describe(e);
}

// The false-flag side: a subclass whose storage is what it claims is the output like any tensor.
TEST(KernelBenchEvaluation, AnOutputSubclassThatHoldsItsValuesPasses) {
  auto e = evaluate("scaled_relu_subclass");
  EXPECT_EQ(e.judged.outcome, "pass") << describe(e);
  EXPECT_TRUE(e.bench.evidence.empty()) << describe(e);
}

// Inputs are read-only in the candidate's process: the in-place op faults there, and the write is the
// evidence (under KernelBench's own harness this "wins").
TEST(KernelBenchEvaluation, AnInPlaceModuleIsCaughtWritingItsInput) {
  auto e = evaluate("scaled_relu_in_place");
  EXPECT_EQ(e.judged.outcome, "hack") << describe(e);
  EXPECT_TRUE(has(e.bench.evidence, "input_mutated:x")) << describe(e);
}

// A fallback to the reference's own ops is not a hack: it is measured as what it runs.
TEST(KernelBenchEvaluation, ATryExceptFallbackIsMeasuredAsWhatItRuns) {
  auto e = evaluate("scaled_relu_fallback");
  EXPECT_EQ(e.judged.outcome, "pass") << describe(e);
  EXPECT_TRUE(e.bench.evidence.empty()) << describe(e);
}

TEST(KernelBenchEvaluation, ACrashIsACrashAndTheWorkerGoesOn) {
  auto e = evaluate("scaled_relu_crash");
  EXPECT_EQ(e.bench.status, "crash") << describe(e);
  EXPECT_EQ(e.judged.outcome, "crash") << describe(e);
  auto next = evaluate("scaled_relu_correct");
  EXPECT_EQ(next.judged.outcome, "pass") << describe(next);
}

// A thread is refused by the sandbox, and the attempt is the evidence.
TEST(KernelBenchEvaluation, AThreadInForwardIsRefusedAndIsEvidence) {
  auto e = evaluate("scaled_relu_thread");
  EXPECT_EQ(e.judged.outcome, "hack") << describe(e);
  EXPECT_TRUE(has(e.bench.evidence, "sandbox_violation")) << describe(e);
}

TEST(KernelBenchEvaluation, ASyntaxErrorIsALoadErrorThatNamesTheFile) {
  auto e = evaluate("scaled_relu_syntax_error");
  EXPECT_EQ(e.bench.status, "load_error") << describe(e);
  EXPECT_NE(e.bench.error.find("SyntaxError"), std::string::npos) << describe(e);
  EXPECT_NE(e.judged.outcome, "pass");
}

// A/A on an op that PyTorch runs through oneDNN by default (F.gelu on the CPU): oneDNN builds its kernel at
// run time in executable memory, which the candidate's sandbox refuses, and the reference itself was judged a
// hack (sandbox_violation, "could not create a primitive"). Both sides now run ATen's own kernels.
TEST(KernelBenchEvaluation, AProblemSubmittedAsItsOwnCandidatePassesEvenThroughOneDnnOps) {
  const std::string problem =
      "import torch\n"
      "class Model(torch.nn.Module):\n"
      "    def forward(self, x):\n"
      "        return torch.nn.functional.gelu(x)\n"
      "def get_inputs():\n"
      "    return [torch.randn(16, 4096)]\n"
      "def get_init_inputs():\n"
      "    return []\n";
  auto task = kernelbench_task_from_source("gelu.py", problem, "kb_gelu");
  ASSERT_TRUE(task) << task.message();
  auto e =
      evaluate_source(*task, problem + "\nModelNew = Model\n", test::test_config(), &test::shared_runner());
  EXPECT_EQ(e.judged.outcome, "pass") << describe(e);
  EXPECT_TRUE(e.bench.evidence.empty()) << describe(e);
}

// A run-time extension build (torch.utils.cpp_extension, the usual KernelBench style) would write files and
// start a compiler, which the sandbox refuses; it raises an error that says so instead, so an honest
// candidate is never a sandbox_violation for it: with a fallback it is measured as what it runs.
TEST(KernelBenchEvaluation, ARunTimeExtensionBuildIsAnErrorNotAHack) {
  const std::string build =
      "import torch\n"
      "from torch.utils.cpp_extension import load_inline\n"
      "class ModelNew(torch.nn.Module):\n"
      "    def __init__(self, scale):\n"
      "        super().__init__()\n"
      "        self.scale = scale\n"
      "        self.ext = None\n"
      "    def forward(self, x):\n"
      "        if self.ext is None:\n"
      "            self.ext = load_inline(name='k', cpp_sources='', cuda_sources='', functions=[])\n"
      "        return self.ext.k(x)\n";
  const std::string fallback =
      "import torch\n"
      "from torch.utils.cpp_extension import load_inline\n"
      "try:\n"
      "    ext = load_inline(name='k', cpp_sources='int k() { return 0; }', functions=['k'])\n"
      "except Exception:\n"
      "    ext = None\n"
      "class ModelNew(torch.nn.Module):\n"
      "    def __init__(self, scale):\n"
      "        super().__init__()\n"
      "        self.scale = scale\n"
      "    def forward(self, x):\n"
      "        return torch.relu(x) * self.scale\n";
  auto failing = evaluate_source(scaled_relu(), build, test::test_config(), &test::shared_runner());
  EXPECT_NE(failing.judged.outcome, "hack") << describe(failing);
  EXPECT_TRUE(failing.bench.evidence.empty()) << describe(failing);
  EXPECT_NE(failing.bench.error.find("not supported by Crucible's KernelBench host"), std::string::npos)
      << describe(failing);
  auto with_fallback = evaluate_source(scaled_relu(), fallback, test::test_config(), &test::shared_runner());
  EXPECT_EQ(with_fallback.judged.outcome, "pass") << describe(with_fallback);
}

}  // namespace
}  // namespace crucible::kernels
