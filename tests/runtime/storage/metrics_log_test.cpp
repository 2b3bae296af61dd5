#include "runtime/storage/metrics_log.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

namespace crucible::runtime {
namespace {

TEST(MetricsLog, LineHasEveryFieldTheIssueNames) {
  step_metrics m;
  m.step = 3;
  m.policy_version = 3;
  m.reward_mean = 0.75;
  m.speedup_best = {{"softmax_scaled", 1.4}};
  auto j = nlohmann::json::parse(to_json_line(m));
  for (const char* key : {"step", "policy_version", "reward_mean", "correct_rate", "flagged_rate",
                          "speedup_mean", "candidates", "staleness_mean", "wall_s", "speedup_best"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_DOUBLE_EQ(j["speedup_best"]["softmax_scaled"].get<double>(), 1.4);
}

TEST(MetricsLog, ProgressLineCountsTasksFasterThanEager) {
  step_metrics m;
  m.step = 7;
  m.speedup_best = {{"a", 1.2}, {"b", 0.8}, {"c", 9.5}};
  std::string line = progress_line(m, 2.5, 12);
  EXPECT_NE(line.find("2/12 tasks"), std::string::npos) << line;
  EXPECT_NE(line.find("9.50x (c)"), std::string::npos) << line;
}

TEST(MetricsLog, ARolledBackRunKeepsOneLinePerStepAndSetsTheRestAside) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("crucible-metrics-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string path = (dir / "metrics.jsonl").string(), aside = (dir / "aside.jsonl").string();
  for (int64_t step = 1; step <= 4; ++step) {
    step_metrics m;
    m.step = step;
    ASSERT_TRUE(append_metrics(path, m));
  }
  std::ofstream(path, std::ios::app) << "{\"step\": 5, \"rew";  // torn by the kill
  auto moved = roll_back_metrics(path, 2, aside);
  ASSERT_TRUE(moved) << moved.message();
  EXPECT_EQ(*moved, 3);
  auto steps = [](const std::string& p) {
    std::vector<std::string> lines;
    std::ifstream in(p);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  };
  auto kept = steps(path);
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(nlohmann::json::parse(kept[1])["step"], 2);
  EXPECT_EQ(steps(aside).size(), 3u);
  EXPECT_EQ(*roll_back_metrics(path, 2, aside), 0);  // nothing more to move
  EXPECT_EQ(*roll_back_metrics((dir / "none.jsonl").string(), 0, aside), 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace crucible::runtime
