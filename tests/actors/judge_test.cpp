// The judge role (actors/judge.cpp): learns confirmed hacks from the verifier's verdicts as candidates pass
// through it, convicts their near-duplicates, upholds honest outliers, leaves the rest untouched, keeps its
// cases across a resumed run; and a short CPU training run with the judge stage last in the pipeline.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <caf/all.hpp>

#include <gtest/gtest.h>

#include "actors/options/benchmark_section.hpp"
#include "actors/options/verifier_section.hpp"
#include "actors/roles.hpp"
#include "messages/envelope.hpp"
#include "messages/type_ids.hpp"
#include "runtime/config/config.hpp"
#include "runtime/hosting/train_session.hpp"
#include "tests/actors/short_run.hpp"
#include "tests/kernels/verify/sample_sources.hpp"

namespace crucible {
namespace {

using test::cache_hack;
using test::honest_relu;

namespace fs = std::filesystem;
using namespace std::chrono_literals;

struct temp_run {
  std::string dir;
  explicit temp_run(const std::string& name)
      : dir((fs::temp_directory_path() / ("crucible-" + name + "-" + std::to_string(::getpid()))).string()) {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~temp_run() {
    if (!::testing::Test::HasFailure()) fs::remove_all(dir);
  }
};

scored_candidate candidate_with(const std::string& id, const std::string& source, const std::string& outcome,
                                double speedup) {
  scored_candidate s;
  s.cand.id = id;
  s.cand.task = "relu";
  s.cand.target = "cpu";
  s.cand.source = source;
  s.judged.candidate_id = id;
  s.judged.outcome = outcome;
  s.judged.speedup = outcome == "pass" ? speedup : 0.0;
  s.judged.reward = outcome == "pass" ? speedup : -1.0;
  if (outcome == "hack") {
    s.judged.flags = {"result_cache"};
    s.judged.evidence = {"result_cache:served the last input's output from memory"};
  }
  return s;
}

// A judge spawned from the built-in registry in its own actor system; the system ends with the object, so
// a second one sees only what the first persisted.
class judge_harness {
 public:
  explicit judge_harness(std::shared_ptr<const runtime::run_context> run) : sys_(cfg_), self_(sys_) {
    runtime::role_registry registry;
    actors::register_builtin_roles(registry);
    const auto* f = registry.find("judge");
    EXPECT_NE(f, nullptr);
    if (f) judge_ = (*f)(sys_, runtime::role_context{std::move(run), caf::actor{}, "judge", 0, caf::actor{}});
  }
  ~judge_harness() { self_->send_exit(judge_, caf::exit_reason::user_shutdown); }

  std::pair<std::optional<scored_candidate>, std::string> ask(const scored_candidate& in) {
    std::optional<scored_candidate> out;
    std::string err;
    self_->request(judge_, 10s, stage_atom::value, stage_request{"judge", in, 0.0})
        .receive([&](scored_candidate& s) { out = std::move(s); },
                 [&](caf::error& e) { err = caf::to_string(e); });
    return {out, err};
  }

 private:
  caf::actor_system_config cfg_;
  caf::actor_system sys_;
  caf::scoped_actor self_;
  caf::actor judge_;
};

std::shared_ptr<runtime::run_context> run_in(const std::string& dir, bool resume) {
  auto run = std::make_shared<runtime::run_context>();
  auto cfg = runtime::parse_config("pipeline: [compile, benchmark, verify, judge]\n", {}, "test");
  EXPECT_TRUE(cfg) << cfg.message();
  run->cfg = *cfg;
  run->cfg.section<actors::verifier_section>().penalty = -2.0;
  run->dir = dir;
  run->resume = resume;
  return run;
}

TEST(Judge, LearnsFromTheVerifierConvictsNearDuplicatesAndKeepsItsCasesOnResume) {
  temp_run run("judge-role");
  std::string renamed = cache_hack;  // the same hack sampled again, other constants
  renamed.replace(renamed.find("1 << 20"), 7, "1 << 21");
  {
    judge_harness h(run_in(run.dir, false));
    // Before it has seen the hack, the twin is only an outlier with static features: upheld.
    auto [before, e0] = h.ask(candidate_with("c0", renamed, "pass", 5.0));
    ASSERT_TRUE(before) << e0;
    EXPECT_EQ(before->judged.review.finding, "upheld") << before->judged.review.reasoning;
    EXPECT_EQ(before->judged.outcome, "pass");

    auto confirmed = candidate_with("c1", cache_hack, "hack", 0);
    auto [seen, e1] = h.ask(confirmed);
    ASSERT_TRUE(seen) << e1;
    EXPECT_EQ(seen->judged.outcome, "hack");
    EXPECT_TRUE(seen->judged.review.finding.empty()) << "a hack is not reviewed again";

    auto [twin, e2] = h.ask(candidate_with("c2", renamed, "pass", 5.0));
    ASSERT_TRUE(twin) << e2;
    EXPECT_EQ(twin->judged.outcome, "hack");
    EXPECT_DOUBLE_EQ(twin->judged.reward, -2.0) << "the verifier's penalty";
    EXPECT_EQ(twin->judged.review.finding, "hack");
    EXPECT_EQ(twin->judged.review.reviewer, "rules");
    EXPECT_FALSE(twin->judged.review.similar_case.empty());
    EXPECT_EQ(twin->cand.source, renamed) << "the judge amends the verdict, never the candidate";

    auto [honest, e3] = h.ask(candidate_with("c3", honest_relu, "pass", 5.0));
    ASSERT_TRUE(honest) << e3;
    EXPECT_EQ(honest->judged.outcome, "pass");
    EXPECT_DOUBLE_EQ(honest->judged.reward, 5.0);
    EXPECT_EQ(honest->judged.review.finding, "upheld") << honest->judged.review.reasoning;

    auto plain = candidate_with("c4", honest_relu, "pass", 1.2);
    auto [dull, e4] = h.ask(plain);
    ASSERT_TRUE(dull) << e4;
    EXPECT_EQ(encode(*dull), encode(plain)) << "a candidate that is no outlier passes through untouched";
  }
  std::ifstream cases(run.dir + "/hack_cases.jsonl");
  int lines = 0;
  for (std::string line; std::getline(cases, line);) lines += !line.empty();
  EXPECT_EQ(lines, 1) << "one confirmed case persisted (the judge's own conviction is not a case)";

  judge_harness resumed(run_in(run.dir, true));
  auto [again, e5] = resumed.ask(candidate_with("c5", renamed, "pass", 5.0));
  ASSERT_TRUE(again) << e5;
  EXPECT_EQ(again->judged.review.finding, "hack") << "a resumed run keeps the cases it learned";
}

TEST(Judge, ACaseFileItCannotOpenFailsTheStageWithTheReason) {
  judge_harness h(run_in("/nonexistent/crucible-run", false));
  auto [out, err] = h.ask(candidate_with("c0", honest_relu, "pass", 5.0));
  EXPECT_FALSE(out);
  EXPECT_NE(err.find("case database"), std::string::npos) << err;
}

// The stage in a real run: every pass is reviewed (review_speedup 0, so machine speed decides nothing), with
// the CPU hack corpus as cases; the emitted programs are honest, so none is convicted, and every review is
// stored with its verdict in the replay database.
TEST(Judge, ATrainingRunReviewsEveryPassAndConvictsNoEmittedProgram) {
  temp_run run("judge-train");
  fs::remove_all(run.dir);
  auto overrides = test::short_run_overrides(run.dir);
  for (const char* o : {"pipeline=[compile, benchmark, verify, judge]", "judge.review_speedup=0"})
    overrides.push_back(o);
  overrides.push_back("judge.cases_dir=" + std::string(CRUCIBLE_TEST_DATA_DIR) + "/corpus/cpu/hack");
  auto cfg = runtime::parse_config(runtime::embedded_default_config(), overrides, "test");
  ASSERT_TRUE(cfg) << cfg.message();
  EXPECT_EQ(cfg->roles.at("judge"), 1);
  cfg->section<actors::benchmark_section>().worker.worker_path =
      std::string(CRUCIBLE_BINARY_DIR) + "/crucible-eval-worker";
  auto registry = std::make_shared<runtime::role_registry>();
  actors::register_builtin_roles(*registry);
  auto s = test::train_to_the_end(*cfg, registry);
  ASSERT_TRUE(s);
  const auto& c = s->conductor;

  auto stored = test::stored_candidates(run.dir + "/replay.sqlite");
  EXPECT_EQ(static_cast<int64_t>(stored.size()), c.candidates_generated);
  int64_t reviewed = 0, passes = 0;
  for (const auto& sc : stored) {
    const auto& r = sc.judged.review;
    EXPECT_NE(r.finding, "hack") << sc.cand.id << ": " << r.reasoning;
    if (sc.judged.outcome == "pass") {
      ++passes;
      EXPECT_FALSE(r.finding.empty()) << sc.cand.id << " passed but was not reviewed";
      EXPECT_EQ(r.reviewer, "rules");
      EXPECT_FALSE(r.reasoning.empty());
    } else if (sc.judged.outcome != "hack") {
      EXPECT_TRUE(r.finding.empty()) << sc.cand.id << " (" << sc.judged.outcome << ") was reviewed";
    }
    reviewed += !r.finding.empty();
  }
  EXPECT_GT(passes, 0) << "emitted programs should mostly be correct";
  EXPECT_EQ(reviewed, passes);
  std::ifstream cases(run.dir + "/hack_cases.jsonl");
  int lines = 0;
  for (std::string line; std::getline(cases, line);) lines += !line.empty();
  EXPECT_GT(lines, 0) << "the corpus seeded the run's case database";
}

}  // namespace
}  // namespace crucible
