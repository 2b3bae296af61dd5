#include "runtime/storage/run_report.hpp"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include "runtime/storage/metrics_log.hpp"
#include "runtime/storage/replay_store.hpp"

namespace crucible::runtime {
namespace {

namespace fs = std::filesystem;

scored_group group(const std::string& gid, const std::string& task, int64_t version, double reward,
                   double speedup) {
  scored_group g;
  g.group_id = gid;
  g.task = task;
  g.policy_version = version;
  g.created_unix = static_cast<double>(version);
  for (int i = 0; i < 2; ++i) {
    scored_candidate s;
    s.cand.id = gid + "-" + std::to_string(i);
    s.judged.outcome = "pass";
    s.judged.speedup = speedup;
    s.reward = reward;
    g.members.push_back(s);
  }
  return g;
}

TEST(RunReport, ComparesFifthsAndEachTasksFirstAndLastGroup) {
  fs::path dir = fs::temp_directory_path() / ("crucible-report-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (int step = 1; step <= 10; ++step) {
    step_metrics m;
    m.step = step;
    m.reward_mean = step <= 2 ? 1.0 : step >= 9 ? 3.0 : 2.0;
    m.wall_s = 10.0 * step;
    append_metrics((dir / "metrics.jsonl").string(), m);
  }
  {
    auto store = replay_store::open((dir / "replay.sqlite").string(), {}, 1);
    ASSERT_TRUE(store);
    ASSERT_TRUE(store->insert(group("a0", "a", 0, 0.5, 0.5)));
    ASSERT_TRUE(store->insert(group("b0", "b", 0, 2.0, 2.0)));
    ASSERT_TRUE(store->insert(group("a1", "a", 5, 1.5, 1.5)));
    ASSERT_TRUE(store->insert(group("b1", "b", 5, 1.0, 1.0)));
  }
  auto r = make_run_report(dir.string());
  ASSERT_TRUE(r) << r.message();
  EXPECT_EQ(r->steps, 10);
  EXPECT_EQ(r->fifth, 2);
  EXPECT_DOUBLE_EQ(r->first_fifth_reward, 1.0);
  EXPECT_DOUBLE_EQ(r->last_fifth_reward, 3.0);
  EXPECT_EQ(r->tasks_total, 2u);
  EXPECT_EQ(r->tasks_faster, 2u);
  EXPECT_EQ(r->tasks_improved, 1u);  // a improved, b did not
  EXPECT_EQ(r->candidates, 8);
  // Best per task: a 1.5x, b 2.0x; fast_p as KernelBench counts it, over every task.
  EXPECT_EQ(r->vs_eager.correct, 2u);
  EXPECT_NEAR(r->vs_eager.geomean, std::sqrt(3.0), 1e-12);
  const std::string text = format_run_report(*r);
  EXPECT_NE(text.find("| a "), std::string::npos);
  EXPECT_NE(text.find("fast_0 1.00 (2/2), fast_1 1.00 (2/2), fast_1.5 0.50 (1/2), fast_2 0.00 (0/2)"),
            std::string::npos)
      << text;
  // --json: the same figures; --csv: a row per step, step first.
  auto j = nlohmann::json::parse(run_report_json(*r));
  EXPECT_EQ(j["steps"], 10);
  EXPECT_EQ(j["tasks"].size(), 2u);
  EXPECT_EQ(j["tasks"][1]["task"], "b");
  EXPECT_DOUBLE_EQ(j["tasks"][1]["best_speedup"].get<double>(), 2.0);
  EXPECT_EQ(j["vs_eager"]["correct"], 2);
  EXPECT_DOUBLE_EQ(j["vs_eager"]["fast_p"]["1.5"]["share"].get<double>(), 0.5);
  auto csv = metrics_csv(dir.string());
  ASSERT_TRUE(csv) << csv.message();
  EXPECT_EQ(csv->substr(0, csv->find('\n')),
            "step,candidates,candidates_total,correct_rate,entropy,flagged_rate,kl,loss,policy_version,"
            "reward_mean,speedup_mean,staleness_mean,wall_s");
  EXPECT_EQ(std::count(csv->begin(), csv->end(), '\n'), 11);
  EXPECT_NE(csv->find("\n10,"), std::string::npos) << *csv;
  std::ofstream(dir / "metrics.jsonl", std::ios::app) << "not json\n";
  auto broken = metrics_csv(dir.string());
  ASSERT_FALSE(broken);
  EXPECT_NE(broken.message().find("line 11 is not JSON"), std::string::npos) << broken.message();
  fs::remove_all(dir);
}

// The report says what convicted the hacks and what the judge found, from the records and the case database.
TEST(RunReport, CountsWhatConvictedTheHacksAndTheJudgesFindings) {
  fs::path dir = fs::temp_directory_path() / ("crucible-report-judge-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  step_metrics m;
  m.step = 1;
  append_metrics((dir / "metrics.jsonl").string(), m);
  {
    auto store = replay_store::open((dir / "replay.sqlite").string(), {}, 1);
    ASSERT_TRUE(store);
    scored_group g = group("g0", "a", 0, 1.0, 4.0);
    g.members[0].judged.review.finding = "upheld";  // an outlier the judge kept
    scored_candidate convicted = g.members[1];
    convicted.cand.id = "g0-2";
    convicted.judged.outcome = "hack";
    convicted.judged.flags = {"judged_hack"};
    convicted.judged.review.finding = "hack";
    scored_candidate caught = convicted;
    caught.cand.id = "g0-3";
    caught.judged.flags = {"output_unwritten", "work_outside_stream"};
    caught.judged.review = {};
    g.members.push_back(convicted);
    g.members.push_back(caught);
    ASSERT_TRUE(store->insert(g));
  }
  std::ofstream(dir / "hack_cases.jsonl") << "{\"case\": 1}\n{\"case\": 2}\n";
  auto r = make_run_report(dir.string());
  ASSERT_TRUE(r) << r.message();
  EXPECT_EQ(r->reviews.at("upheld"), 1);
  EXPECT_EQ(r->reviews.at("hack"), 1);
  EXPECT_EQ(r->hack_flags.at("judged_hack"), 1);
  EXPECT_EQ(r->hack_flags.at("output_unwritten"), 1);
  EXPECT_EQ(r->hack_flags.at("work_outside_stream"), 1);
  EXPECT_EQ(r->hack_cases, 2);
  const std::string text = format_run_report(*r);
  EXPECT_NE(text.find("judge: 2 outliers reviewed, hack 1, upheld 1; 2 confirmed hacks"), std::string::npos)
      << text;
  EXPECT_NE(text.find("what convicted the hacks: judged_hack 1 output_unwritten 1 work_outside_stream 1"),
            std::string::npos)
      << text;
  fs::remove_all(dir);
}

TEST(RunReport, NotARunDirectoryIsAnError) {
  auto r = make_run_report("/nonexistent/run");
  ASSERT_FALSE(r);
  EXPECT_NE(r.message().find("metrics.jsonl"), std::string::npos);
}

}  // namespace
}  // namespace crucible::runtime
