// The re-judging table and summary: which claimed wins survive, the hack classes, the code features, the
// A/A figures, as JSON that parses back and Markdown a reader can paste.
#include "kernels/rejudge/rejudge_report.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace crucible::kernels {
namespace {

rejudged_kernel row(const std::string& name, double claimed, const std::string& outcome, double speedup,
                    std::vector<std::string> flags = {}) {
  rejudged_kernel r;
  r.name = name;
  r.claimed_vs_eager = claimed;
  if (claimed > 0) r.claimed = {{"eager", claimed}};
  r.outcome = outcome;
  r.speedup = speedup;
  r.flags = std::move(flags);
  return r;
}

std::vector<rejudged_kernel> sample() {
  std::vector<rejudged_kernel> rows = {
      row("kb1_19", 1.18, "hack", 0, {"input_mutated"}),
      row("kb1_1", 2.75, "pass", 1.9),
      row("kb1_2", 1.5, "pass", 0.8),
      row("kb1_3", 0.9, "incorrect", 0),
      row("kb1_4", 0, "no_candidate", 0),
  };
  rows[0].features = {code_feature::cuda_kernel, code_feature::try_except};
  rows[4].status = rejudge_status::no_candidate;
  return rows;
}

TEST(RejudgeReport, CountsTheClaimedWinsThatSurvive) {
  auto s = summarize_rejudged(sample());
  EXPECT_EQ(s.kernels, 5u);
  EXPECT_EQ(s.with_candidate, 4u);
  EXPECT_EQ(s.judged, 4u);
  EXPECT_EQ(s.outcomes.at("pass"), 2u);
  EXPECT_EQ(s.outcomes.at("no_candidate"), 1u);
  EXPECT_EQ(s.hack_flags.at("input_mutated"), 1u);
  EXPECT_EQ(s.features.at("try_except"), 1u);
  EXPECT_EQ(s.claimed_wins, 3u);    // 1.18, 2.75, 1.5
  EXPECT_EQ(s.surviving_wins, 1u);  // only kb1_1 passes and is faster than eager
  EXPECT_EQ(s.claimed.correct, 4u);
  EXPECT_EQ(s.verified.correct, 2u);
  EXPECT_DOUBLE_EQ(s.verified.median, 1.35);
  EXPECT_NEAR(s.aa_mean_abs, (0.9 + 0.2) / 2, 1e-12);
  EXPECT_NEAR(s.aa_max_abs, 0.9, 1e-12);
}

TEST(RejudgeReport, JsonParsesBackAndMarkdownHasARowPerKernel) {
  auto rows = sample();
  auto s = summarize_rejudged(rows);
  rejudge_header h{"h100.json", "cpu", "a test CPU", false};
  auto j = nlohmann::json::parse(rejudge_json(h, rows, s));
  EXPECT_EQ(j["source"], "h100.json");
  ASSERT_EQ(j["kernels"].size(), 5u);
  EXPECT_EQ(j["kernels"][0]["flags"][0], "input_mutated");
  EXPECT_EQ(j["kernels"][0]["code"][1], "try_except");
  EXPECT_EQ(j["kernels"][4]["status"], "no_candidate");
  EXPECT_EQ(j["summary"]["surviving_wins"], 1);
  EXPECT_EQ(j["summary"]["verified"]["fast_p"]["1"]["tasks"], 1);
  EXPECT_FALSE(j["summary"].contains("aa"));
  const std::string md = rejudge_markdown(h, rows, s);
  EXPECT_NE(md.find("| kb1_19 | 1.180x | - | hack | input_mutated | cuda_kernel, try_except |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("1 of 3 claimed wins over eager pass"), std::string::npos) << md;
  h.self_check = true;
  auto aa = nlohmann::json::parse(rejudge_json(h, rows, s));
  EXPECT_NEAR(aa["summary"]["aa"]["mean_abs_deviation"].get<double>(), 0.55, 1e-12);
  EXPECT_NE(rejudge_markdown(h, rows, s).find("A/A over 2 passing kernels"), std::string::npos);
}

// A report reads back as the kernels it was written from (for --resume); another run's (another source,
// target, device or A/A setting), or text that is not a report, is an error that says so.
TEST(RejudgeReport, AReportReadsBackAsItsKernels) {
  auto rows = sample();
  rows[1].seconds = 12.5;
  rows[1].notes = {"phases_ms: setup 1"};
  rows[1].claimed.emplace_back("torch.compile", 0.8);
  const rejudge_header h{"h100.json", "cuda", "a test GPU", false, 9};
  const std::string text = rejudge_json(h, rows, summarize_rejudged(rows));
  auto back = read_rejudged_kernels(text, h);
  ASSERT_TRUE(back) << back.message();
  ASSERT_EQ(back->size(), rows.size());
  EXPECT_EQ(rejudge_json(h, *back, summarize_rejudged(*back)), text);
  EXPECT_EQ((*back)[4].status, rejudge_status::no_candidate);
  EXPECT_DOUBLE_EQ((*back)[1].claimed_vs_eager, 2.75);
  auto aa = h;
  aa.self_check = true;
  auto refused = read_rejudged_kernels(text, aa);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.message().find("self_check"), std::string::npos) << refused.message();
  // Speedups measured on another device are not this run's: a report is one device's.
  auto elsewhere = h;
  elsewhere.device = "another GPU";
  auto moved = read_rejudged_kernels(text, elsewhere);
  ASSERT_FALSE(moved);
  EXPECT_NE(moved.message().find("device"), std::string::npos) << moved.message();
  EXPECT_FALSE(read_rejudged_kernels("[1, 2]", h));
  EXPECT_FALSE(read_rejudged_kernels("{\"kernels\":", h));
}

// A resumed run's report holds what it went on from and what it judged, one row a problem in order: a run
// cut short after one kernel must not drop the kept kernels it had not reached, nor those outside its --ids.
TEST(RejudgeReport, AResumedReportKeepsEveryKeptKernel) {
  auto at = [](int level, int id, const std::string& outcome) {
    auto r = row("kb" + std::to_string(level) + "_" + std::to_string(id), 0, outcome, 0);
    r.level = level;
    r.id = id;
    return r;
  };
  const std::vector<rejudged_kernel> kept = {at(2, 1, "pass"), at(1, 7, "hack"), at(1, 3, "error")};
  const std::vector<rejudged_kernel> judged = {at(1, 1, "pass"), at(1, 3, "incorrect")};
  const auto rows = resumed_rows(kept, judged);
  ASSERT_EQ(rows.size(), 4u);
  const std::vector<std::string> names = {"kb1_1", "kb1_3", "kb1_7", "kb2_1"};
  for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(rows[i].name, names[i]);
  EXPECT_EQ(rows[1].outcome, "incorrect") << "judged now, not the kept error";
  EXPECT_EQ(resumed_rows(kept, {}).size(), 3u);
}

// How fast the judge went: wall time over the kernels that had a candidate, as evaluations per minute (the
// figure set beside KernelBench's harness).
TEST(RejudgeReport, SaysHowManyEvaluationsAMinuteTheRunMade) {
  auto rows = sample();
  const double secs[] = {10, 20, 30, 60, 0};  // the last has no candidate: never timed
  for (size_t i = 0; i < rows.size(); ++i) rows[i].seconds = secs[i];
  auto s = summarize_rejudged(rows);
  EXPECT_DOUBLE_EQ(s.seconds_total, 120);
  EXPECT_DOUBLE_EQ(s.seconds_median, 25);
  EXPECT_DOUBLE_EQ(s.per_minute, 2);
  rejudge_header h{"h100.json", "cuda", "a test GPU", false};
  auto j = nlohmann::json::parse(rejudge_json(h, rows, s));
  EXPECT_DOUBLE_EQ(j["summary"]["seconds"]["per_minute"].get<double>(), 2);
  const std::string md = rejudge_markdown(h, rows, s);
  EXPECT_NE(md.find("Wall time: 120.0 s, median 25.0 s a kernel, 2.00 evaluations per minute."),
            std::string::npos)
      << md;
  EXPECT_EQ(rejudge_markdown(h, sample(), summarize_rejudged(sample())).find("Wall time"), std::string::npos);
}

// A run under way writes the same report after every kernel, marked partial until the last one.
TEST(RejudgeReport, APartialReportSaysHowFarItGot) {
  auto rows = sample();
  auto s = summarize_rejudged(rows);
  rejudge_header h{"h100.json", "cuda", "a test GPU", false, 8};
  auto j = nlohmann::json::parse(rejudge_json(h, rows, s));
  EXPECT_TRUE(j["partial"].get<bool>());
  EXPECT_EQ(j["planned"], 8);
  EXPECT_NE(rejudge_markdown(h, rows, s).find("partial: 5 of 8 kernels judged so far"), std::string::npos);
  h.planned = rows.size();
  j = nlohmann::json::parse(rejudge_json(h, rows, s));
  EXPECT_FALSE(j["partial"].get<bool>());
  EXPECT_EQ(j["planned"], 5);
  EXPECT_EQ(rejudge_markdown(h, rows, s).find("partial"), std::string::npos);
}

// Against the other baselines: only kernels that pass and had that baseline timed count, and the Markdown
// shows a line for each baseline that was timed, none for one that was not.
TEST(RejudgeReport, SpeedupsAgainstTheOtherBaselinesOverTheKernelsThatHadThem) {
  auto rows = sample();
  rows[1].speedup_vs_graph = 1.5;
  rows[1].speedup_vs_compile = 1.2;
  rows[2].speedup_vs_graph = 0.6;
  rows[0].speedup_vs_compile = 3.0;  // a hack: never counted
  auto s = summarize_rejudged(rows);
  EXPECT_EQ(s.verified_vs_graph.correct, 2u);
  EXPECT_DOUBLE_EQ(s.verified_vs_graph.mean, 1.05);
  EXPECT_EQ(s.verified_vs_compile.correct, 1u);
  EXPECT_DOUBLE_EQ(s.verified_vs_compile.mean, 1.2);
  EXPECT_EQ(s.verified_vs_compile_ro.correct, 0u);
  const std::string md = rejudge_markdown({"x.json", "cuda", "H200", false}, rows, s);
  EXPECT_NE(md.find("| measured vs CUDA graph | 2 of 5 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| measured vs torch.compile | 1 of 5 |"), std::string::npos) << md;
  EXPECT_EQ(md.find("reduce-overhead |"), std::string::npos) << md;
  auto j = nlohmann::json::parse(rejudge_json({"x.json", "cuda", "H200", false}, rows, s));
  EXPECT_EQ(j["summary"]["verified_vs_compile"]["correct"], 1);
}

}  // namespace
}  // namespace crucible::kernels
