// KernelBench-format candidates on the CUDA target: the problem's Model and ModelNew both in the CUDA
// worker's interpreter, measured by the one evaluation protocol. Problems and candidates are files written
// for these tests (tests/data/kernelbench, candidates/cuda for those that only make sense on a device).
// Label gpu: skipped without a device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <stdexcept>

#include <ATen/ATen.h>
#include <c10/cuda/CUDACachingAllocator.h>

#include "kernels/abi/host_tensor.hpp"
#include "kernels/python/kernelbench_reference.hpp"
#include "tests/kernels/eval_worker/cuda/cuda_support.hpp"

namespace crucible::kernels {
namespace {

const std::string data = std::string(CRUCIBLE_TEST_DATA_DIR) + "/kernelbench";

class KernelBenchCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = test::gpu_missing(); !why.empty()) GTEST_SKIP() << why;
  }
  static evaluation_config config() {
    auto cfg = test::gpu_eval_config();
    cfg.worker.timeout_s = 300;  // a load_inline build compiles torch's headers: about a minute
    return cfg;
  }
  static bench_runner& runner() {
    static auto cfg = config();
    static bench_runner r(cfg.worker, cfg.runner);
    return r;
  }
  static const task_spec& task(const std::string& file, const std::string& name) {
    static std::map<std::string, task_spec> made;
    auto it = made.find(name);
    if (it != made.end()) return it->second;
    auto t = kernelbench_task(data + "/KernelBench/" + file, name);
    if (!t) throw std::runtime_error(t.message());
    t->targets = {"cuda"};
    return made.emplace(name, *t).first->second;
  }
  static evaluation eval(const task_spec& t, const std::string& candidate) {
    auto e =
        evaluate_source(t, test::read_file(data + "/candidates/" + candidate + ".py"), config(), &runner());
    std::printf("[%s] %s\n", candidate.c_str(), evaluation_json(e).c_str());
    return e;
  }
  static evaluation relu(const std::string& candidate) {
    return eval(task("level1/2_Scaled_relu.py", "kb1_2_Scaled_relu"), candidate);
  }
  static bool has_evidence(const evaluation& e, const std::string& kind) {
    return std::any_of(e.bench.evidence.begin(), e.bench.evidence.end(),
                       [&](const std::string& t) { return t.rfind(kind, 0) == 0; });
  }
  static bool has_note(const evaluation& e, const std::string& start) {
    return std::any_of(e.bench.notes.begin(), e.bench.notes.end(),
                       [&](const std::string& n) { return n.rfind(start, 0) == 0; });
  }
};

TEST_F(KernelBenchCuda, ACorrectModuleIsMeasuredAgainstEagerAndTheGraph) {
  auto e = relu("scaled_relu_correct");
  EXPECT_EQ(e.judged.outcome, "pass") << e.bench.error;
  EXPECT_TRUE(e.bench.timed);
  EXPECT_TRUE(e.bench.evidence.empty());
  EXPECT_GT(e.bench.timing.eager_ms_median, 0.0);
  EXPECT_GT(e.bench.timing.graph_ms_median, 0.0) << "the CUDA-graph baseline was not measured";
  // Each KernelBench candidate gets a fresh interpreter: here (gpu.yaml) a child forked for it.
  EXPECT_TRUE(has_note(e, "worker: evaluated in process")) << evaluation_json(e);
}

// With fork_modules (the CUDA target's default in a config), one worker imports torch once and never binds
// the device; each candidate is evaluated in a child forked for it, which binds the device, and the worker
// serves the next one: no worker retired, no fresh one started. Its start note says forking is on (it is
// turned off when loading initialized the CUDA driver, which a child could not then use). Without it, the
// worker is retired after each candidate.
TEST_F(KernelBenchCuda, AForkingWorkerBindsTheDeviceInEachChildAndServesTheNext) {
  auto cfg = config();
  cfg.worker.fork_modules = true;
  bench_runner forking(cfg.worker, cfg.runner);
  const auto& t = task("level1/2_Scaled_relu.py", "kb1_2_Scaled_relu");
  const std::string source = test::read_file(data + "/candidates/scaled_relu_correct.py");
  auto first = evaluate_source(t, source, cfg, &forking);
  std::printf("[forked 1] %s\n", evaluation_json(first).c_str());
  EXPECT_EQ(first.judged.outcome, "pass") << first.bench.error;
  EXPECT_TRUE(std::any_of(first.bench.notes.begin(), first.bench.notes.end(), [](const std::string& n) {
    return n.find("KernelBench modules evaluated in children forked for them") != std::string::npos;
  })) << evaluation_json(first);
  EXPECT_TRUE(has_note(first, "worker: evaluated in process"));
  EXPECT_TRUE(has_note(first, "worker: the device bound at this request"));
  EXPECT_FALSE(has_note(first, "worker retired"));
  const int worker = forking.worker().pid();
  EXPECT_GT(worker, 0);
  auto second = evaluate_source(t, source, cfg, &forking);
  std::printf("[forked 2] %s\n", evaluation_json(second).c_str());
  EXPECT_EQ(second.judged.outcome, "pass") << second.bench.error;
  EXPECT_EQ(forking.worker().pid(), worker);
  EXPECT_GT(first.bench.timing.graph_ms_median, 0.0);
  EXPECT_GT(second.bench.timing.graph_ms_median, 0.0);
  // Work a candidate leaves running ends with its child: the worker that forked it serves the next.
  auto late = evaluate_source(t, test::read_file(data + "/candidates/cuda/scaled_relu_side_stream_late.py"),
                              cfg, &forking);
  std::printf("[forked, late side stream] %s\n", evaluation_json(late).c_str());
  EXPECT_NE(late.judged.outcome, "pass");
  EXPECT_FALSE(has_note(late, "worker retired")) << evaluation_json(late);
  EXPECT_EQ(forking.worker().pid(), worker);
  EXPECT_EQ(evaluate_source(t, source, cfg, &forking).judged.outcome, "pass");
  EXPECT_EQ(forking.worker().starts(), 1);

  cfg.worker.fork_modules = false;
  bench_runner fresh(cfg.worker, cfg.runner);
  auto unforked = evaluate_source(t, source, cfg, &fresh);
  std::printf("[not forked] %s\n", evaluation_json(unforked).c_str());
  EXPECT_EQ(unforked.judged.outcome, "pass") << unforked.bench.error;
  EXPECT_TRUE(has_note(unforked, "worker retired")) << "each KernelBench candidate gets a fresh interpreter";
  EXPECT_FALSE(has_note(unforked, "worker: evaluated in process"));
}

// Inputs are drawn where the task runs (KernelBench's 6.4 GB inputs took minutes on one CPU thread), the
// heavy tail too, reproducibly in the seed. A problem whose get_inputs() passes its own CPU generator draws
// on the CPU instead, every time, so that a seed still means the same values.
TEST_F(KernelBenchCuda, TheReferenceDrawsOnTheDeviceReproduciblyInTheSeed) {
  const std::vector<std::pair<std::string, std::string>> problems = {
      {"level1/2_Scaled_relu.py", "kb1_2_Scaled_relu"},
      {"../../kernelbench_generators/1_Cpu_generator.py", "cpu_generator"}};
  for (const auto& [file, name] : problems) {
    SCOPED_TRACE(name);
    auto ref = kernelbench_reference::create(task(file, name), 0);
    ASSERT_TRUE(ref) << ref.message();
    const host_tensor shape("float32", {4, 64});
    auto draw = [&](uint64_t seed, input_variant v) {
      at::Tensor d = at::full({4, 64}, -7.0f, at::TensorOptions().device(at::kCUDA, 0));
      cru_tensor view = shape.view();
      view.data = d.data_ptr();
      (*ref)->fill_inputs({view}, seed, v, 0);
      return d.cpu();
    };
    at::Tensor a = draw(1, input_variant::nominal), b = draw(1, input_variant::nominal);
    at::Tensor c = draw(2, input_variant::nominal);
    at::Tensor h1 = draw(1, input_variant::heavy_tailed), h2 = draw(1, input_variant::heavy_tailed);
    EXPECT_TRUE(at::equal(a, b));
    EXPECT_FALSE(at::equal(a, c));
    EXPECT_GT(a.std().item<float>(), 0.5f) << "drawn, not left as filled";
    EXPECT_TRUE(at::equal(h1, h2));
    EXPECT_TRUE(at::equal(h1.sign(), a.sign()));
    EXPECT_GE((h1.abs() - a.abs()).min().item<float>(), 0.0f);
    EXPECT_GT((h1.abs() > 10 * a.abs()).sum().item<int64_t>(), 0);
  }
}

// `crucible rejudge` and `eval` read a problem on the device they evaluate on (today's KernelBench inputs
// took minutes on the CPU): the same task as read on the CPU.
TEST_F(KernelBenchCuda, AProblemReadOnTheDeviceIsTheProblemReadOnTheCpu) {
  const std::string path = data + "/KernelBench/level2/7_Linear_gelu.py";
  auto on_cpu = kernelbench_task(path, "kb2_7_Linear_gelu");
  ASSERT_TRUE(on_cpu) << on_cpu.message();
  auto on_device = kernelbench_task(path, "kb2_7_Linear_gelu", 0);
  ASSERT_TRUE(on_device) << on_device.message();
  ASSERT_EQ(on_device->inputs.size(), on_cpu->inputs.size());
  for (size_t i = 0; i < on_cpu->inputs.size(); ++i) {
    EXPECT_EQ(on_device->inputs[i].name, on_cpu->inputs[i].name);
    EXPECT_EQ(on_device->inputs[i].shape, on_cpu->inputs[i].shape);
    EXPECT_EQ(on_device->inputs[i].dtype, on_cpu->inputs[i].dtype);
  }
  EXPECT_EQ(on_device->description, on_cpu->description);
  EXPECT_EQ(on_device->module, on_cpu->module);
}

// ... and give the memory the reading took back before the worker starts: a problem of 512 MiB (inputs and
// output) read on the device leaves the allocator where it was, but for the libraries' per-handle workspaces
// (cuBLAS's, which PyTorch 1.x cannot free) — a bound far below what the problem took.
TEST_F(KernelBenchCuda, AProblemReadOnTheDeviceGivesItsMemoryBack) {
  const std::string source = R"(import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x) * 2


def get_inputs():
    return [torch.randn(4096, 16384)]


def get_init_inputs():
    return []
)";
  namespace alloc = c10::cuda::CUDACachingAllocator;
  (void)at::zeros({1}, at::TensorOptions().device(at::kCUDA, 0));
  alloc::emptyCache();
  alloc::resetPeakStats(0);
  auto stats = [] { return alloc::getDeviceStats(0).reserved_bytes[0]; };
  const auto before = stats().current;
  auto t = kernelbench_task_from_source("big_relu.py", source, "big_relu", 0);
  ASSERT_TRUE(t) << t.message();
  const int64_t problem = 2 * int64_t{4096} * 16384 * 4;
  EXPECT_GE(stats().peak - before, problem) << "read on the device";
  EXPECT_LE(stats().current - before, int64_t{64} << 20) << "reading the problem kept its device memory";
}

// A forward that allocates beyond its inputs and output (here four products of a 64 MiB input held at once)
// is measured as the reference is built, and the protocol keeps room for it: the note says how much.
TEST_F(KernelBenchCuda, WhatAForwardAllocatesBeyondItsInputsAndOutputIsMeasured) {
  const std::string source = R"(import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        products = [x * float(i + 1) for i in range(4)]
        return products[0] + products[1] + products[2] + products[3]


def get_inputs():
    return [torch.randn(4096, 4096)]


def get_init_inputs():
    return []
)";
  auto t = kernelbench_task_from_source("four_products.py", source, "four_products", 0);
  ASSERT_TRUE(t) << t.message();
  t->targets = {"cuda"};
  auto e = evaluate_source(*t, t->module + "\n\nclass ModelNew(Model):\n    pass\n", config(), &runner());
  std::printf("[four products] %s\n", evaluation_json(e).c_str());
  EXPECT_EQ(e.judged.outcome, "pass") << e.bench.error;
  double gib = -1, held = -1, planned = -1;
  for (const auto& n : e.bench.notes) {
    std::sscanf(n.c_str(), "memory: the reference's forward allocates %lf GiB", &gib);
    std::sscanf(n.c_str(), "memory: the evaluation held at most %lf GiB on the device, planned %lf GiB",
                &held, &planned);
  }
  // Four products of 64 MiB beyond the input and the output, and the sums between them.
  EXPECT_GE(gib, 0.2) << evaluation_json(e);
  EXPECT_LE(gib, 0.6) << evaluation_json(e);
  // The plan's room covers what the evaluation held.
  EXPECT_GT(held, 0.0) << evaluation_json(e);
  EXPECT_LE(held, planned) << evaluation_json(e);
}

// The A/A run's unit: the problem's own Model as the candidate passes, near 1x.
TEST_F(KernelBenchCuda, TheProblemAsItsOwnCandidatePassesNearOne) {
  auto t = task("level2/7_Linear_gelu.py", "kb2_7_Linear_gelu");
  std::string self = t.module + "\n\nclass ModelNew(Model):\n    pass\n";
  auto e = evaluate_source(t, self, config(), &runner());
  std::printf("[A/A] %s\n", evaluation_json(e).c_str());
  EXPECT_EQ(e.judged.outcome, "pass") << e.bench.error;
  EXPECT_TRUE(e.bench.evidence.empty());
  EXPECT_GT(e.bench.speedup_vs_eager, 0.7);
  EXPECT_LT(e.bench.speedup_vs_eager, 1.4);
}

// benchmark.lead_region: an empty region (wait, flush, gate, no work) before each of the candidate's timed
// calls, so that it follows a region as the baselines do. It runs (its time is in the phases note), the A/A
// still passes near 1, and work a candidate leaves running past its call is still never a pass.
TEST_F(KernelBenchCuda, AnEmptyRegionBeforeEachTimedCallKeepsTheVerdicts) {
  auto cfg = config();
  cfg.eval.lead_region = true;
  auto t = task("level2/7_Linear_gelu.py", "kb2_7_Linear_gelu");
  auto e = evaluate_source(t, t.module + "\n\nclass ModelNew(Model):\n    pass\n", cfg, &runner());
  std::printf("[A/A, lead region] %s\n", evaluation_json(e).c_str());
  EXPECT_EQ(e.judged.outcome, "pass") << e.bench.error;
  EXPECT_TRUE(e.bench.evidence.empty());
  EXPECT_GT(e.bench.speedup_vs_eager, 0.7);
  EXPECT_LT(e.bench.speedup_vs_eager, 1.4);
  EXPECT_TRUE(std::any_of(e.bench.notes.begin(), e.bench.notes.end(), [](const std::string& n) {
    return n.rfind("phases_ms:", 0) == 0 && n.find(" lead ") != std::string::npos;
  })) << ::testing::PrintToString(e.bench.notes);
  auto relu_task = task("level1/2_Scaled_relu.py", "kb1_2_Scaled_relu");
  auto late = evaluate_source(
      relu_task, test::read_file(data + "/candidates/cuda/scaled_relu_side_stream_late.py"), cfg, &runner());
  EXPECT_TRUE(late.judged.outcome == "hack" || late.judged.outcome == "incorrect") << late.judged.outcome;
}

// A reference that copies a host scalar to the device in its forward (KernelBench's kb2_83 and kb2_93)
// cannot be captured: PyTorch refuses before CUDA sees anything wrong, so the capture is ended through the
// graph object. No graph baseline, and nothing else lost: the worker is not retired for it, fresh inputs are
// still drawn on the device (on the H100, kb2_83's fresh draws ran on the CPU after its failed capture, 96 ms
// before each of the candidate's calls, and its A/A read 0.964x), and the problem as its own candidate
// passes.
TEST_F(KernelBenchCuda, AReferenceThatCannotBeCapturedLeavesTheWorkerWhole) {
  auto t = kernelbench_task(data + "/problems_cuda/level2/8_Min_with_a_host_scalar.py",
                            "kb2_8_Min_with_a_host_scalar");
  ASSERT_TRUE(t) << t.message();
  t->targets = {"cuda"};
  std::string self = t->module + "\n\nclass ModelNew(Model):\n    pass\n";
  auto e = evaluate_source(*t, self, config(), &runner());
  std::printf("[uncapturable A/A] %s\n", evaluation_json(e).c_str());
  EXPECT_EQ(e.judged.outcome, "pass") << e.bench.error;
  EXPECT_TRUE(has_note(e, "graph baseline unavailable: the reference could not be captured"))
      << ::testing::PrintToString(e.bench.notes);
  EXPECT_EQ(e.bench.timing.graph_ms_median, 0.0);
  EXPECT_FALSE(has_note(e, "worker retired after this evaluation: a failed capture"));
  EXPECT_FALSE(has_note(e, "inputs: get_inputs() drew on the CPU"))
      << ::testing::PrintToString(e.bench.notes);
  // A candidate that draws random numbers on the device after the reference's refused capture: the
  // generator is out of capture mode again, so its draws work.
  std::string draws = t->module +
                      "\n\nclass ModelNew(Model):\n    def forward(self, x):\n"
                      "        return super().forward(x) + 0.0 * torch.rand((), device=x.device)\n";
  auto d = evaluate_source(*t, draws, config(), &runner());
  EXPECT_EQ(d.judged.outcome, "pass") << d.bench.error;
  // The worker that evaluated them serves the next.
  EXPECT_EQ(relu("scaled_relu_correct").judged.outcome, "pass");
}

TEST_F(KernelBenchCuda, AWrongModuleIsIncorrect) {
  EXPECT_EQ(relu("scaled_relu_wrong").judged.outcome, "incorrect");
}

// A tensor subclass holding nothing while it claims the output's shape (CUDA-L1's kb1_9): not the output,
// and the claim is the evidence.
TEST_F(KernelBenchCuda, AnOutputThatDisguisesItsStorageIsAHack) {
  auto e = relu("scaled_relu_disguised");
  EXPECT_EQ(e.judged.outcome, "hack") << e.bench.error;
  EXPECT_TRUE(has_evidence(e, "output_disguised")) << ::testing::PrintToString(e.bench.notes);
  EXPECT_NE(e.bench.error.find("claims shape [4, 64] and holds float32 [0]"), std::string::npos)
      << e.bench.error;
}

TEST_F(KernelBenchCuda, AnOutputSubclassThatHoldsItsValuesPasses) {
  auto e = relu("scaled_relu_subclass");
  EXPECT_EQ(e.judged.outcome, "pass") << e.bench.error;
  EXPECT_TRUE(e.bench.evidence.empty()) << ::testing::PrintToString(e.bench.evidence);
}

TEST_F(KernelBenchCuda, AnInPlaceModuleIsAHack) {
  auto e = relu("scaled_relu_in_place");
  EXPECT_EQ(e.judged.outcome, "hack");
  EXPECT_TRUE(has_evidence(e, "input_mutated"));
}

TEST_F(KernelBenchCuda, ATryExceptFallbackIsMeasuredAsWhatItRuns) {
  auto e = relu("scaled_relu_fallback");
  EXPECT_EQ(e.judged.outcome, "pass") << e.bench.error;
  EXPECT_TRUE(e.bench.evidence.empty());
}

TEST_F(KernelBenchCuda, ACrashIsACrashAndTheNextEvaluationIsFine) {
  auto e = relu("scaled_relu_crash");
  EXPECT_EQ(e.judged.outcome, "crash") << e.bench.error;
  EXPECT_EQ(relu("scaled_relu_correct").judged.outcome, "pass");
}

// Most published solutions: a load_inline kernel launched on the legacy default stream. Honest, and it
// must pass with no evidence (the worker's stream for modules synchronizes with that stream).
TEST_F(KernelBenchCuda, ALoadInlineKernelOnTheDefaultStreamPasses) {
  auto e = relu("cuda/scaled_relu_load_inline");
  EXPECT_EQ(e.judged.outcome, "pass") << e.bench.error;
  EXPECT_TRUE(e.bench.evidence.empty());
  EXPECT_TRUE(e.bench.timed);
}

TEST_F(KernelBenchCuda, ASideStreamTheCallerWaitsForPasses) {
  auto e = relu("cuda/scaled_relu_side_stream_synced");
  EXPECT_EQ(e.judged.outcome, "pass") << e.bench.error;
  EXPECT_TRUE(e.bench.evidence.empty());
}

TEST_F(KernelBenchCuda, ASideStreamThatOutlivesTheCallIsNeverAPass) {
  auto e = relu("cuda/scaled_relu_side_stream_late");
  EXPECT_NE(e.judged.outcome, "pass");
  EXPECT_TRUE(e.judged.outcome == "hack" || e.judged.outcome == "incorrect") << e.judged.outcome;
}

// Flags a module sets for itself hold during its calls only: the reference keeps the worker's.
TEST_F(KernelBenchCuda, FlagsTheModuleSetsAreItsOwnAndNotEvidence) {
  auto e = relu("cuda/scaled_relu_own_flags");
  EXPECT_EQ(e.judged.outcome, "pass") << e.bench.error;
  EXPECT_TRUE(e.bench.evidence.empty());
  EXPECT_TRUE(has_note(e, "flags: the candidate set"));
}

TEST_F(KernelBenchCuda, RebindingAFunctionTheReferenceCallsIsAHack) {
  auto e = relu("cuda/scaled_relu_rebinds_torch");
  EXPECT_EQ(e.judged.outcome, "hack");
  EXPECT_TRUE(has_evidence(e, "reference_changed"));
}

TEST_F(KernelBenchCuda, ChangingTheReferenceModelsWeightsIsAHack) {
  auto e =
      eval(task("level2/7_Linear_gelu.py", "kb2_7_Linear_gelu"), "cuda/linear_gelu_halves_reference_weights");
  EXPECT_EQ(e.judged.outcome, "hack");
  EXPECT_TRUE(has_evidence(e, "reference_changed"));
}

}  // namespace
}  // namespace crucible::kernels
