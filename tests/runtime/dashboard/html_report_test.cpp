#include "runtime/dashboard/html_report.hpp"

#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "runtime/storage/metrics_log.hpp"
#include "runtime/storage/replay_store.hpp"

namespace crucible::runtime {
namespace {

namespace fs = std::filesystem;

TEST(HtmlReport, IsOneSelfContainedFileWithTheChartsAndTheData) {
  const fs::path dir = fs::temp_directory_path() / ("crucible-html-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (int step = 1; step <= 4; ++step) {
    step_metrics m;
    m.step = step;
    m.reward_mean = 0.25 * step;
    m.wall_s = 5.0 * step;
    append_metrics((dir / "metrics.jsonl").string(), m);
  }
  {
    auto store = replay_store::open((dir / "replay.sqlite").string(), {}, 1);
    ASSERT_TRUE(store);
    scored_group g;
    g.group_id = "g0";
    g.task = "evil</script><script>alert(1)</script>";  // a name that would end the data's script element
    scored_candidate c;
    c.cand.id = "c0";
    c.cand.task = g.task;
    c.judged.outcome = "pass";
    c.judged.speedup = 1.7;
    g.members = {c};
    ASSERT_TRUE(store->insert(g));
  }
  auto html = html_report(dir.string());
  ASSERT_TRUE(html) << html.message();
  EXPECT_EQ(html->rfind("<!doctype html>", 0), 0u);
  EXPECT_EQ(html->find("src=\""), std::string::npos) << "nothing is fetched: every script is inline";
  EXPECT_EQ(html->find("<link"), std::string::npos);
  EXPECT_NE(html->find("uPlot"), std::string::npos) << "the charts library is inlined";
  EXPECT_NE(html->find("window.CrucibleCharts"), std::string::npos);
  EXPECT_NE(html->find("window.CRUCIBLE_REPORT = {"), std::string::npos);
  EXPECT_NE(html->find("\"reward_mean\":1.0"), std::string::npos);
  EXPECT_EQ(html->find("evil</script>"), std::string::npos) << "a task's name cannot end the script early";
  EXPECT_NE(html->find("evil\\u003c/script>\\u003cscript>"), std::string::npos);
  // Four script elements (uPlot, charts, data, report) and no more: the escaped name opened none.
  size_t scripts = 0;
  for (size_t at = 0; (at = html->find("<script>", at)) != std::string::npos; ++at) ++scripts;
  EXPECT_EQ(scripts, 4u);
  fs::remove_all(dir);
}

TEST(HtmlReport, ARunDirectoryWithoutARunIsAnError) {
  auto html = html_report("/nonexistent/run");
  ASSERT_FALSE(html);
  EXPECT_FALSE(html.message().empty());
}

}  // namespace
}  // namespace crucible::runtime
