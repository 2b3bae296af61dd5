// `crucible rejudge` as a user runs it: the real binary over a CUDA-L1-format file written here from
// KernelBench-format files written for the tests, and the A/A run over a checkout written for the tests.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include "tests/cli/cli_support.hpp"

namespace {

namespace fs = std::filesystem;

const std::string data = std::string(CRUCIBLE_TEST_DATA_DIR) + "/kernelbench";
// Few buckets and trials: the verdicts, not the figures, are under test.
const std::string quick =
    " --set benchmark.buckets=3 --set benchmark.trials=2 --set benchmark.seeds=2 --set "
    "benchmark.timeout_s=60";

crucible::test::command_result run(const std::string& args) {
  return crucible::test::run_command(std::string(CRUCIBLE_BINARY_DIR) + "/crucible " + args + " 2>&1");
}

std::string text_of(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

nlohmann::json record(int id, const std::string& candidate, double claimed) {
  nlohmann::json j = {{"level_id", 1},
                      {"task_id", id},
                      {"ref_code", text_of(data + "/KernelBench/level1/2_Scaled_relu.py")},
                      {"custom_code", candidate.empty() ? "" : text_of(data + "/candidates/" + candidate)},
                      {"score_default", claimed}};
  return j;
}

TEST(RejudgeCommand, ClaimedSpeedupsAreMeasuredAndHacksNamed) {
  const fs::path dir = fs::temp_directory_path() / ("crucible-rejudge-cli-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    std::ofstream out(dir / "release.json");
    out << record(1, "scaled_relu_correct.py", 1.3).dump() << "\n"
        << record(2, "scaled_relu_in_place.py", 1.18).dump() << "\n"
        << record(3, "", 0).dump() << "\n";
  }
  auto r = run("rejudge " + (dir / "release.json").string() + " --json " + (dir / "out.json").string() +
               " --markdown " + (dir / "out.md").string() + quick);
  if (r.out.find("no KernelBench support") != std::string::npos) GTEST_SKIP() << "built without Python";
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("[2/3] kb1_2: hack input_mutated"), std::string::npos) << r.out;
  auto j = nlohmann::json::parse(text_of((dir / "out.json").string()));
  ASSERT_EQ(j["kernels"].size(), 3u);
  EXPECT_EQ(j["kernels"][0]["outcome"], "pass") << j["kernels"][0].dump();
  EXPECT_GT(j["kernels"][0]["speedup_vs_eager"].get<double>(), 0);
  EXPECT_GT(j["kernels"][0]["seconds"].get<double>(), 0);
  EXPECT_FALSE(j["kernels"][0]["notes"].empty());  // the evaluation's own account (phases, timing)
  EXPECT_EQ(j["kernels"][1]["outcome"], "hack");
  EXPECT_EQ(j["kernels"][1]["flags"][0], "input_mutated");
  EXPECT_EQ(j["kernels"][2]["status"], "no_candidate");
  EXPECT_EQ(j["summary"]["claimed_wins"], 2);
  EXPECT_EQ(j["summary"]["hack_flags"]["input_mutated"], 1);
  EXPECT_NE(text_of((dir / "out.md").string()).find("| kb1_2 | 1.180x | - | hack | input_mutated |"),
            std::string::npos);
  // --ids keeps those problems only (id 3 has no candidate: nothing is evaluated); an id none has is an
  // error.
  auto only =
      run("rejudge " + (dir / "release.json").string() + " --ids 3 --json " + (dir / "only.json").string());
  ASSERT_EQ(only.exit_code, 0) << only.out;
  auto j3 = nlohmann::json::parse(text_of((dir / "only.json").string()));
  ASSERT_EQ(j3["kernels"].size(), 1u);
  EXPECT_EQ(j3["kernels"][0]["status"], "no_candidate");
  auto none = run("rejudge " + (dir / "release.json").string() + " --ids 9");
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.out.find("no kernel has one of the --ids"), std::string::npos) << none.out;
  EXPECT_EQ(run("rejudge " + (dir / "missing.json").string()).exit_code, 2);
  EXPECT_EQ(run("rejudge " + dir.string()).exit_code, 2);  // a folder needs its checkout
  fs::remove_all(dir);
}

// The kernels that pass, as the sft stage's corpus: named as training names the checkout's tasks; a record
// whose Model is not the checkout's problem of that number is left out and named; hacks never enter.
TEST(RejudgeCommand, KernelsThatPassBecomeTheSftCorpusNamedAsTrainingNamesTasks) {
  const fs::path dir = fs::temp_directory_path() / ("crucible-rejudge-sft-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    std::ofstream out(dir / "release.json");
    out << record(2, "scaled_relu_correct.py", 1.3).dump() << "\n"
        << record(2, "scaled_relu_in_place.py", 1.18).dump() << "\n"
        << record(1, "scaled_relu_correct.py", 1.2).dump() << "\n";  // level1/1 is Small_matmul
  }
  const std::string sft = (dir / "sft.jsonl").string();
  auto r = run("rejudge " + (dir / "release.json").string() + " --kernelbench " + data + " --sft-jsonl " +
               sft + quick);
  if (r.out.find("no KernelBench support") != std::string::npos) GTEST_SKIP() << "built without Python";
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("sft corpus: 1 of 2 passing kernels"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("left out: kb1_1 (its Model is not"), std::string::npos) << r.out;
  std::ifstream in(sft);
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["task"], "kb1_2_Scaled_relu");
  EXPECT_EQ(lines[0]["code"], text_of(data + "/candidates/scaled_relu_correct.py"));
  EXPECT_GT(lines[0]["speedup"].get<double>(), 0);
  // It needs the checkout to name tasks, and an A/A run has no kernels of its own.
  auto unnamed = run("rejudge " + (dir / "release.json").string() + " --sft-jsonl " + sft);
  EXPECT_EQ(unnamed.exit_code, 2);
  EXPECT_NE(unnamed.out.find("--sft-jsonl needs --kernelbench"), std::string::npos) << unnamed.out;
  EXPECT_EQ(run("rejudge --aa --kernelbench " + data + " --sft-jsonl " + sft).exit_code, 2);
  fs::remove_all(dir);
}

// A run spread over several sessions (or cut short): --resume keeps the kernels --json's report has and
// judges the rest into the same report; another run's report is refused, not mixed in.
TEST(RejudgeCommand, ResumeKeepsWhatTheReportHasAndJudgesTheRest) {
  const fs::path dir = fs::temp_directory_path() / ("crucible-rejudge-resume-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string release = (dir / "release.json").string(), report = (dir / "out.json").string();
  {
    std::ofstream out(release);
    out << record(1, "scaled_relu_correct.py", 1.3).dump() << "\n"
        << record(2, "scaled_relu_in_place.py", 1.18).dump() << "\n"
        << record(3, "", 0).dump() << "\n";
  }
  auto first = run("rejudge " + release + " --ids 1 --json " + report + quick);
  if (first.out.find("no KernelBench support") != std::string::npos) GTEST_SKIP() << "built without Python";
  ASSERT_EQ(first.exit_code, 0) << first.out;
  const auto before = nlohmann::json::parse(text_of(report));
  ASSERT_EQ(before["kernels"].size(), 1u);

  // A run over other --ids keeps the report's kernels beside its own.
  auto third = run("rejudge " + release + " --ids 3 --resume --json " + report + quick);
  ASSERT_EQ(third.exit_code, 0) << third.out;
  const auto both = nlohmann::json::parse(text_of(report));
  ASSERT_EQ(both["kernels"].size(), 2u) << both.dump();
  EXPECT_EQ(both["kernels"][0], before["kernels"][0]);
  EXPECT_EQ(both["kernels"][1]["outcome"], "no_candidate");

  auto rest = run("rejudge " + release + " --resume --json " + report + quick);
  ASSERT_EQ(rest.exit_code, 0) << rest.out;
  EXPECT_NE(rest.out.find("[1/3] kb1_1: pass (kept from " + report + ")"), std::string::npos) << rest.out;
  EXPECT_NE(rest.out.find("[2/3] kb1_2: hack input_mutated"), std::string::npos) << rest.out;
  EXPECT_NE(rest.out.find("[3/3] kb1_3: no_candidate (kept from"), std::string::npos) << rest.out;
  const auto after = nlohmann::json::parse(text_of(report));
  ASSERT_EQ(after["kernels"].size(), 3u);
  EXPECT_FALSE(after["partial"].get<bool>());
  EXPECT_EQ(after["kernels"][0], before["kernels"][0]) << "a kept kernel is the report's, not measured again";
  EXPECT_EQ(after["kernels"][1]["outcome"], "hack");
  EXPECT_EQ(after["summary"]["kernels"], 3);

  auto other = run("rejudge --aa --kernelbench " + data + " --level 1 --resume --json " + report + quick);
  EXPECT_EQ(other.exit_code, 2) << other.out;
  EXPECT_NE(other.out.find("another run's report"), std::string::npos) << other.out;
  {
    std::ofstream out(dir / "broken.json");
    out << "{\"kernels\": [";
  }
  auto broken = run("rejudge " + release + " --resume --json " + (dir / "broken.json").string() + quick);
  EXPECT_EQ(broken.exit_code, 2) << broken.out;
  EXPECT_NE(broken.out.find("not a report of crucible rejudge"), std::string::npos) << broken.out;
  EXPECT_EQ(run("rejudge " + release + " --resume").exit_code, 2);
  fs::remove_all(dir);
}

// Each problem as its own candidate: the protocol must pass it (an A/A run flags nothing) and measure it
// near 1x; the figure itself is the bench's (bench/RESULTS.md), not this test's.
TEST(RejudgeCommand, AnAARunPassesEveryProblemAgainstItself) {
  const fs::path out = fs::temp_directory_path() / ("crucible-aa-" + std::to_string(::getpid()) + ".json");
  auto r = run("rejudge --aa --kernelbench " + data + " --level 1 --json " + out.string() + quick);
  if (r.out.find("no KernelBench support") != std::string::npos) GTEST_SKIP() << "built without Python";
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(text_of(out.string()));
  ASSERT_EQ(j["kernels"].size(), 2u);
  for (const auto& k : j["kernels"]) EXPECT_EQ(k["outcome"], "pass") << k.dump();
  EXPECT_TRUE(j["summary"].contains("aa"));
  EXPECT_NE(r.out.find("A/A over 2 passing kernels"), std::string::npos) << r.out;
  EXPECT_EQ(run("rejudge --aa").exit_code, 2);
  fs::remove(out);
}

}  // namespace
