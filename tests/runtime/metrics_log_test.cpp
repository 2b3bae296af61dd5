#include "runtime/metrics_log.hpp"

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

}  // namespace
}  // namespace crucible::runtime
