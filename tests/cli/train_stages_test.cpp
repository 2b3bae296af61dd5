// CUDA-L1's three stages from one config on the CPU, end to end (configs/lm-cpu.yaml): the sft stage's
// corpus run, BPE and supervised training; the self-supervised and contrastive stages with the language model
// it trained; each stage's report; a resume of the finished run runs nothing again.

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "runtime/storage/replay_store.hpp"
#include "tests/cli/cli_support.hpp"

namespace {

namespace fs = std::filesystem;

crucible::test::command_result crucible(const std::string& args) {
  return crucible::test::run_command(std::string(CRUCIBLE_BINARY_DIR) + "/crucible " + args + " 2>&1");
}

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return nlohmann::json::parse(s.str(), nullptr, false);
}

TEST(TrainStages, LmCpuRunsSftSelfSupervisedAndContrastiveEndToEnd) {
  const std::string dir = crucible::test::fresh_temp_dir("stages-lm-cpu");
  const std::string config = std::string(CRUCIBLE_TEST_DATA_DIR) + "/../../configs/lm-cpu.yaml";
  auto r = crucible("train --config " + config + " --set run.dir=" + dir);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  for (const char* line : {"stage 1 of 3: sft", "stage 2 of 3: self_supervised", "stage 3 of 3: contrastive"})
    EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
  auto done = read_json(fs::path(dir) / "stages.json");
  ASSERT_TRUE(done.is_object()) << r.out;
  EXPECT_EQ(done["done"], nlohmann::json({"sft", "self_supervised", "contrastive"}));

  // The sft stage: a corpus run of the program policy with correct kernels, and a model trained on them.
  auto corpus =
      crucible::runtime::replay_store::read_scored(dir + "/stages/sft/corpus/replay.sqlite", "pass");
  ASSERT_TRUE(corpus) << corpus.message();
  EXPECT_GT(corpus->size(), 0u);
  for (const char* f : {"config.json", "model.safetensors", "tokenizer.json"})
    EXPECT_TRUE(fs::exists(fs::path(dir) / "stages/sft/model" / f)) << f;
  EXPECT_TRUE(fs::exists(fs::path(dir) / "stages/sft/metrics.jsonl"));

  // The language-model stages: every candidate the model wrote was scored (a format verdict without code,
  // or through the pipeline), each stage reports its figures and exports the model it ended with.
  for (const char* stage : {"self_supervised", "contrastive"}) {
    const fs::path sd = fs::path(dir) / "stages" / stage;
    auto cands = crucible::runtime::replay_store::read_scored((sd / "replay.sqlite").string());
    ASSERT_TRUE(cands) << cands.message();
    ASSERT_GT(cands->size(), 0u) << stage;
    for (const auto& c : *cands) {
      EXPECT_FALSE(c.cand.tokens.empty()) << c.cand.id;
      EXPECT_FALSE(c.cand.answer.empty() && c.cand.format_error.empty() && c.cand.source.empty())
          << c.cand.id;
      EXPECT_FALSE(c.judged.outcome.empty()) << c.cand.id;
      if (!c.cand.format_error.empty()) EXPECT_EQ(c.judged.outcome, "format") << c.cand.id;
    }
    auto report = read_json(sd / "report.json");
    ASSERT_TRUE(report.is_object()) << stage;
    EXPECT_EQ(report["figures"]["candidates"].get<int64_t>() > 0, true) << report.dump();
    EXPECT_TRUE(fs::exists(sd / "model" / "model.safetensors")) << stage;
  }
  EXPECT_NE(r.out.find("0 lost"), std::string::npos) << r.out;

  // crucible report shows each stage's run and figures.
  auto report = crucible("report " + dir);
  EXPECT_EQ(report.exit_code, 0) << report.out;
  for (const char* line : {"== stage sft", "== stage self_supervised", "== stage contrastive", "whole stage"})
    EXPECT_NE(report.out.find(line), std::string::npos) << line << "\n" << report.out;

  // Resuming a finished run trains nothing again.
  auto again = crucible("train --resume " + dir);
  EXPECT_EQ(again.exit_code, 0) << again.out;
  EXPECT_NE(again.out.find("stage 3 of 3: contrastive (done)"), std::string::npos) << again.out;
  fs::remove_all(dir);
}

}  // namespace
