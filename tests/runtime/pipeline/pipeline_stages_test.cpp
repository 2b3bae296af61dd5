// The one stage table: which role serves a stage, which slot of the candidate its answer fills, and which
// roles no node may serve.
#include "runtime/pipeline/pipeline_stages.hpp"

#include <gtest/gtest.h>

namespace crucible::runtime {
namespace {

scored_candidate before() {
  scored_candidate s;
  s.cand.id = "r0-g1-0";
  s.cand.source = "int main() {}";
  s.compiled.log = "before";
  s.bench.status = "before";
  s.judged.outcome = "before";
  s.reward = 0.5;
  return s;
}

// What a stage answered: every part of the candidate changed, so the test sees which part is taken.
scored_candidate answer() {
  scored_candidate a = before();
  a.cand.source = "rewritten";
  a.compiled.log = "answered";
  a.bench.status = "answered";
  a.judged.outcome = "answered";
  a.reward = 9.0;
  return a;
}

TEST(PipelineStages, OneTableBothWays) {
  EXPECT_EQ(builtin_stages(), (std::vector<std::string>{"compile", "benchmark", "verify"}));
  for (const auto& stage : builtin_stages()) {
    EXPECT_TRUE(is_builtin_stage(stage));
    EXPECT_EQ(stage_of_role(role_of_stage(stage)), stage);
  }
  EXPECT_EQ(role_of_stage("benchmark"), "benchmarker");
  EXPECT_EQ(role_of_stage("source_audit"), "source_audit");
  EXPECT_EQ(stage_of_role("verifier"), "verify");
  EXPECT_FALSE(is_builtin_stage("judge"));
  EXPECT_TRUE(stage_info_of("judge").head_only);
  EXPECT_TRUE(stage_info_of("verify").head_only);
  EXPECT_FALSE(stage_info_of("benchmark").head_only);
  const auto custom = stage_info_of("source_audit");
  EXPECT_EQ(custom.role, "source_audit");
  EXPECT_EQ(custom.slot, stage_slot::whole);
  EXPECT_FALSE(custom.head_only);
}

TEST(PipelineStages, EachStageFillsOnlyItsSlot) {
  auto s = before();
  ASSERT_TRUE(take_stage_answer("compile", s, answer()));
  EXPECT_EQ(s.compiled.log, "answered");
  EXPECT_EQ(s.bench.status, "before");
  EXPECT_EQ(s.judged.outcome, "before");

  s = before();
  ASSERT_TRUE(take_stage_answer("benchmark", s, answer()));
  EXPECT_EQ(s.bench.status, "answered");
  EXPECT_EQ(s.compiled.log, "before");
  EXPECT_EQ(s.judged.outcome, "before");
  EXPECT_EQ(s.reward, 0.5);

  s = before();
  ASSERT_TRUE(take_stage_answer("verify", s, answer()));
  EXPECT_EQ(s.judged.outcome, "answered");
  EXPECT_EQ(s.bench.status, "before");

  // A custom stage amends the scoring, never the candidate it was sent.
  s = before();
  ASSERT_TRUE(take_stage_answer("source_audit", s, answer()));
  EXPECT_EQ(s.judged.outcome, "answered");
  EXPECT_EQ(s.bench.status, "answered");
  EXPECT_EQ(s.reward, 9.0);
  for (const char* stage : {"compile", "benchmark", "verify", "judge", "source_audit"}) {
    s = before();
    ASSERT_TRUE(take_stage_answer(stage, s, answer()));
    EXPECT_EQ(s.cand.source, "int main() {}") << stage;
  }
}

TEST(PipelineStages, AnAnswerAboutAnotherCandidateIsAnError) {
  auto s = before();
  auto other = answer();
  other.cand.id = "r0-g1-1";
  auto st = take_stage_answer("benchmark", s, other);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("'r0-g1-1', asked about 'r0-g1-0'"), std::string::npos) << st.message();
  EXPECT_EQ(s.bench.status, "before") << "nothing taken from it";
}

TEST(PipelineStages, NodesServeStagesButNotVerdictsOrTheRunsDrivers) {
  for (const auto& role : head_roles()) {
    EXPECT_TRUE(is_head_role(role));
    EXPECT_NE(node_refusal(role).find("runs on the head"), std::string::npos) << role;
  }
  for (const char* role : {"conductor", "replay_buffer", "learner"}) EXPECT_TRUE(is_singleton_role(role));
  for (const char* role : {"generator", "compiler", "source_audit"}) EXPECT_FALSE(is_singleton_role(role));
  for (const char* role : {"verifier", "judge"})
    EXPECT_NE(node_refusal(role).find("gives verdicts"), std::string::npos) << role;
  for (const char* role : {"compiler", "benchmarker", "source_audit"})
    EXPECT_EQ(node_refusal(role), "") << role;
}

}  // namespace
}  // namespace crucible::runtime
