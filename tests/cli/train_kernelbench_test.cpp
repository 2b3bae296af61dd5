// A training run on KernelBench tasks (configs/kernelbench.yaml): problems written for the tests, a served
// model played by a loopback server that answers each prompt with a correct ModelNew, one that writes its
// input in place and one without code. Every answer goes through the pipeline and gets its verdict.

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "runtime/storage/replay_store.hpp"
#include "tests/cli/cli_support.hpp"
#include "tests/cli/kernelbench_answers.hpp"
#include "tests/policies/remote/loopback_server.hpp"

namespace {

namespace fs = std::filesystem;

const std::string data = std::string(CRUCIBLE_TEST_DATA_DIR) + "/kernelbench";
const std::string config = std::string(CRUCIBLE_TEST_DATA_DIR) + "/../../configs/kernelbench.yaml";

crucible::test::command_result crucible(const std::string& args) {
  return crucible::test::run_command(std::string(CRUCIBLE_BINARY_DIR) + "/crucible " + args + " 2>&1");
}

TEST(TrainKernelBench, AServedModelsModelNewAnswersAreJudgedThroughThePipeline) {
  // As many requests as the run makes (the server stops listening when the test ends).
  crucible::policies::test::loopback_server server(crucible::test::kernelbench_answers, 1 << 20);
  const std::string dir = crucible::test::fresh_temp_dir("train-kernelbench");
  auto r =
      crucible("train --config " + config + " --set run.dir=" + dir + " --set tasks.kernelbench_dir=" + data +
               " --set tasks.include=[kb1_2_Scaled_relu] --set policy.remote.url=" + server.url() +
               " --set run.max_steps=1 --set run.max_minutes=4 --set learner.group_size=3"
               " --set async.groups_in_flight=1 --set benchmark.buckets=3 --set benchmark.trials=1"
               " --set benchmark.seeds=2 --set benchmark.timeout_s=60");
  if (r.out.find("no KernelBench support") != std::string::npos) GTEST_SKIP() << "built without Python";
  ASSERT_EQ(r.exit_code, 0) << r.out;
  crucible::test::expect_each_kernelbench_answer_judged(dir, r.out);
  auto report = crucible("report " + dir);
  EXPECT_EQ(report.exit_code, 0) << report.out;
  EXPECT_NE(report.out.find("fast_1"), std::string::npos) << report.out;
}

// CUDA-L1's three stages on KernelBench tasks: the sft stage's corpus written by the served model (the
// paper's corpus came from existing models), its correct ModelNew trained into an embedded model (a Python
// answer, varied as Python), which then writes the contrastive stage's answers, each judged.
TEST(TrainKernelBench, TheSftStageLearnsFromTheServedModelsCorrectAnswersAndTheModelWritesOn) {
  crucible::policies::test::loopback_server server(crucible::test::kernelbench_answers, 1 << 20);
  const std::string dir = crucible::test::fresh_temp_dir("train-kernelbench-sft");
  auto r = crucible(
      "train --config " + config + " --set run.dir=" + dir + " --set tasks.kernelbench_dir=" + data +
      " --set tasks.include=[kb1_2_Scaled_relu] --set policy.remote.url=" + server.url() +
      " --set stages=[sft,contrastive] --set policy.kind=lm --set policy.lm.device=cpu"
      " --set policy.lm.max_context=4096 --set policy.lm.max_new_tokens=768 --set policy.lm.micro_batch=4"
      " --set sft.corpus_policy=remote --set sft.corpus_steps=1 --set sft.corpus_minutes=4"
      " --set sft.vocab_size=1024 --set sft.model.hidden_size=64 --set sft.model.intermediate_size=176"
      " --set sft.steps=6 --set sft.batch=2 --set sft.warmup_steps=1 --set sft.checkpoint_every=3"
      " --set sft.variants=2 --set run.max_steps=1 --set run.max_minutes=4 --set learner.group_size=3"
      " --set async.groups_in_flight=1 --set benchmark.buckets=3 --set benchmark.trials=1"
      " --set benchmark.seeds=2 --set benchmark.timeout_s=60");
  if (r.out.find("no KernelBench support") != std::string::npos) GTEST_SKIP() << "built without Python";
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("stage 1 of 2: sft"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stage 2 of 2: contrastive"), std::string::npos) << r.out;
  // The corpus: the served model's answers judged; the correct one passes, as Python.
  auto corpus =
      crucible::runtime::replay_store::read_scored(dir + "/stages/sft/corpus/replay.sqlite", "pass");
  ASSERT_TRUE(corpus) << corpus.message();
  ASSERT_FALSE(corpus->empty()) << r.out;
  for (const auto& c : *corpus) {
    EXPECT_EQ(c.cand.language, "py");
    EXPECT_NE(c.cand.source.find("clamp_min"), std::string::npos) << c.cand.source;
  }
  // Trained on the correct kernel and its variants (one distinct source: hacks and format answers never).
  EXPECT_NE(r.out.find("examples from 1 correct kernels"), std::string::npos) << r.out;
  for (const char* f : {"config.json", "model.safetensors", "tokenizer.json"})
    EXPECT_TRUE(fs::exists(fs::path(dir) / "stages/sft/model" / f)) << f;
  // The embedded model wrote the contrastive stage's answers: every one scored, a format verdict or through
  // the pipeline.
  auto written = crucible::runtime::replay_store::read_scored(dir + "/stages/contrastive/replay.sqlite");
  ASSERT_TRUE(written) << written.message();
  ASSERT_FALSE(written->empty()) << r.out;
  for (const auto& c : *written) {
    EXPECT_FALSE(c.cand.tokens.empty()) << c.cand.id;
    EXPECT_FALSE(c.judged.outcome.empty()) << c.cand.id;
  }
  EXPECT_NE(r.out.find("0 lost"), std::string::npos) << r.out;
}

// The corpus may be a user's alone (sft.corpus_policy none): e.g. crucible rejudge --sft-jsonl's kernels.
TEST(TrainKernelBench, TheSftStageTrainsOnAUsersCorpusWithoutACorpusRun) {
  const std::string dir = crucible::test::fresh_temp_dir("train-kernelbench-sft-jsonl");
  const std::string jsonl = dir + "-corpus.jsonl";
  {
    std::ifstream in(data + "/candidates/scaled_relu_correct.py");
    std::stringstream code;
    code << in.rdbuf();
    std::ofstream(jsonl)
        << nlohmann::json{{"task", "kb1_2_Scaled_relu"}, {"code", code.str()}, {"speedup", 1.1}}.dump()
        << "\n";
  }
  auto r =
      crucible("train --config " + config + " --set run.dir=" + dir + " --set tasks.kernelbench_dir=" + data +
               " --set tasks.include=[kb1_2_Scaled_relu] --set stages=[sft] --set policy.kind=lm"
               " --set policy.lm.device=cpu --set policy.lm.max_context=4096"
               " --set policy.lm.max_new_tokens=768 --set sft.corpus_policy=none --set sft.jsonl=" +
               jsonl +
               " --set sft.vocab_size=600 --set sft.model.hidden_size=32 --set sft.model.intermediate_size=64"
               " --set sft.steps=3 --set sft.batch=2 --set sft.warmup_steps=1");
  if (r.out.find("no KernelBench support") != std::string::npos) GTEST_SKIP() << "built without Python";
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_FALSE(fs::exists(fs::path(dir) / "stages/sft/corpus")) << r.out;
  EXPECT_NE(r.out.find("examples from 1 correct kernels"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(fs::path(dir) / "stages/sft/model/model.safetensors")) << r.out;
  fs::remove(jsonl);
}

// A served model that never answers holds up nothing: once the run has drained, the generator's wait ends
// (policy::set_interrupt). Before, each queued prompt waited out policy.remote.timeout_s (here an hour).
TEST(TrainKernelBench, AServerThatNeverAnswersDoesNotHoldUpTheEnd) {
  crucible::policies::test::loopback_server silent(
      [](const nlohmann::json&) { return std::make_pair(0, std::string()); });
  const std::string dir = crucible::test::fresh_temp_dir("train-kernelbench-silent");
  const auto t0 = std::chrono::steady_clock::now();
  auto r =
      crucible("train --config " + config + " --set run.dir=" + dir + " --set tasks.kernelbench_dir=" + data +
               " --set policy.remote.url=" + silent.url() +
               " --set policy.remote.timeout_s=3600 --set run.max_minutes=0.2 --set run.shutdown_grace_s=2");
  if (r.out.find("no KernelBench support") != std::string::npos) GTEST_SKIP() << "built without Python";
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("0 lost"), std::string::npos) << r.out;
  // Not a speed bound: the failure this guards against takes the timeout (an hour) per queued prompt.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::minutes(10));
}

// What cannot train on KernelBench tasks says so before anything starts: the program policy (it writes C-ABI
// kernels), the sft stage with the program policy writing its corpus, or with no corpus at all, a folder that
// is no checkout.
TEST(TrainKernelBench, WhatCannotWriteModelNewIsRefusedBeforeTheRun) {
  auto program = crucible("train --dry-run --set tasks.kernelbench_dir=" + data);
  if (program.out.find("no KernelBench support") != std::string::npos) GTEST_SKIP() << "built without Python";
  EXPECT_EQ(program.exit_code, 2) << program.out;
  EXPECT_NE(program.out.find("set policy.kind to lm or remote"), std::string::npos) << program.out;
  auto sft = crucible("train --dry-run --config " + config + " --set tasks.kernelbench_dir=" + data +
                      " --set stages=[sft,contrastive] --set policy.kind=lm --set sft.corpus_policy=program");
  EXPECT_EQ(sft.exit_code, 2) << sft.out;
  EXPECT_NE(sft.out.find("set sft.corpus_policy to remote"), std::string::npos) << sft.out;
  auto served = crucible("train --dry-run --config " + config + " --set tasks.kernelbench_dir=" + data +
                         " --set stages=[sft,contrastive]");  // policy.kind remote: no model of its own
  EXPECT_EQ(served.exit_code, 2) << served.out;
  EXPECT_NE(served.out.find("set policy.kind to lm"), std::string::npos) << served.out;
  auto no_corpus =
      crucible("train --dry-run --config " + config + " --set tasks.kernelbench_dir=" + data +
               " --set stages=[sft,contrastive] --set policy.kind=lm --set sft.corpus_policy=none");
  EXPECT_EQ(no_corpus.exit_code, 2) << no_corpus.out;
  EXPECT_NE(no_corpus.out.find("give sft.jsonl"), std::string::npos) << no_corpus.out;
  auto missing =
      crucible("train --dry-run --config " + config + " --set tasks.kernelbench_dir=" + data + "/none");
  EXPECT_EQ(missing.exit_code, 2) << missing.out;
  EXPECT_NE(missing.out.find("tasks.kernelbench_dir:"), std::string::npos) << missing.out;
  auto ok = crucible("train --dry-run --config " + config + " --set tasks.kernelbench_dir=" + data);
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
  EXPECT_NE(ok.out.find("kb1_2_Scaled_relu"), std::string::npos) << ok.out;
}

// The CUDA target trains on KernelBench tasks too: the problems are read on the run's device where this
// process sees one, else on the CPU (the same tasks). cuda/ runs it on a device.
TEST(TrainKernelBench, TheCudaTargetTakesTheSameProblems) {
  auto cuda = crucible("train --dry-run --config " + config +
                       " --set target=cuda --set tasks.kernelbench_dir=" + data +
                       " --set tasks.include=[kb1_1_Small_matmul,kb1_2_Scaled_relu]");
  if (cuda.out.find("no KernelBench support") != std::string::npos) GTEST_SKIP() << "built without Python";
  EXPECT_EQ(cuda.exit_code, 0) << cuda.out;
  EXPECT_NE(cuda.out.find("tasks (2, target cuda): kb1_1_Small_matmul, kb1_2_Scaled_relu"), std::string::npos)
      << cuda.out;
}

}  // namespace
