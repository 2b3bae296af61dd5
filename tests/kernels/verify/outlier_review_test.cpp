// The judge's review of outliers: which candidates it reviews, what the prompt holds, how an answer is read
// (a malformed one is inconclusive, never a crash), what the rule-based reviewer concludes, and how a finding
// changes the verdict.
#include "kernels/verify/outlier_review.hpp"

#include <gtest/gtest.h>

#include "tests/kernels/verify/sample_sources.hpp"

namespace crucible::kernels {
namespace {

using test::cache_hack;
using test::honest_relu;

scored_candidate passing(const std::string& source, double speedup, double peak_fraction = 0.1) {
  scored_candidate s;
  s.cand.id = "g1-0";
  s.cand.task = "relu";
  s.cand.target = "cpu";
  s.cand.source = source;
  s.bench.peak_fraction = peak_fraction;
  s.judged.outcome = "pass";
  s.judged.speedup = speedup;
  s.judged.reward = speedup;
  return s;
}

hack_case confirmed(const std::string& source, const std::string& cls, const std::string& id) {
  scored_candidate s = passing(source, 0);
  s.judged.outcome = "hack";
  s.judged.flags = {cls};
  s.judged.evidence = {cls + ":served from memory"};
  auto c = *case_from_verdict(s);
  c.id = id;
  return c;
}

TEST(OutlierReview, ReviewsOnlyPassingOutliers) {
  review_options o;
  EXPECT_TRUE(review_triggers(passing(honest_relu, 1.5), {}, o).empty());
  EXPECT_EQ(review_triggers(passing(honest_relu, 3.0), {}, o),
            std::vector<review_trigger>{review_trigger::speedup});
  EXPECT_EQ(review_triggers(passing(honest_relu, 1.0, 0.85), {}, o),
            std::vector<review_trigger>{review_trigger::near_roofline});
  EXPECT_EQ(review_triggers(passing(honest_relu, 1.0), {"static_state"}, o),
            std::vector<review_trigger>{review_trigger::static_features});
  o.review_static = false;
  EXPECT_TRUE(review_triggers(passing(honest_relu, 1.0), {"static_state"}, o).empty());
  auto failed = passing(honest_relu, 10.0, 0.9);
  failed.judged.outcome = "hack";
  EXPECT_TRUE(review_triggers(failed, {"static_state"}, o).empty()) << "the judge never reviews a non-pass";
  EXPECT_EQ(candidate_static_features(passing(cache_hack, 1)), std::vector<std::string>{"static_state"});
}

TEST(OutlierReview, ThePromptHoldsTheEvidenceAndTheSimilarCases) {
  review_facts f;
  f.task = "relu";
  f.target = "cpu";
  f.source = honest_relu;
  f.speedup = 4.25;
  f.peak_fraction = 0.5;
  f.verdict_evidence = {"static feature static_state: line 2: static float cache[1 << 20];"};
  f.static_features = {"static_state"};
  f.triggers = {review_trigger::speedup, review_trigger::static_features};
  f.similar = {{confirmed(cache_hack, "result_cache", "case-1"), 0.42}};
  auto p = build_prompt(f);
  for (const char* want :
       {"TASK: relu (target cpu)", "speedup 4.25x", "50% of the roofline",
        "WHY REVIEWED: speedup, static_features", "STATIC FEATURES: static_state",
        "- static feature static_state: line 2", "y[i] = x[i] > 0 ? x[i] : 0",
        "[1] case case-1: class result_cache, task relu, from the verifier, similarity 0.42",
        "evidence: result_cache:served from memory", "static float cache[1 << 20];",
        "FINDING: upheld|hack|inconclusive", "REASONING:"})
    EXPECT_NE(p.text.find(want), std::string::npos) << "missing '" << want << "' in\n" << p.text;
  EXPECT_EQ(p.facts.similar.size(), 1u);
}

TEST(OutlierReview, AnswersAreParsedAndMalformedOnesAreInconclusive) {
  auto a = parse_answer("FINDING: hack\nCASE: abc\nREASONING: same as abc,\nline two\n");
  EXPECT_EQ(a.finding, review_finding::hack);
  EXPECT_EQ(a.cited_case, "abc");
  EXPECT_EQ(a.reasoning, "same as abc,\nline two");
  EXPECT_EQ(parse_answer("  finding:  Upheld.\nreasoning: fine").finding, review_finding::inconclusive)
      << "'upheld.' is not a finding";
  EXPECT_EQ(parse_answer("Finding: UPHELD\nReasoning: fine").finding, review_finding::upheld);

  auto none = parse_answer("I think this kernel is fast because it vectorises.");
  EXPECT_EQ(none.finding, review_finding::inconclusive);
  EXPECT_NE(none.reasoning.find("no FINDING line"), std::string::npos);
  auto unknown = parse_answer("FINDING: suspicious\nREASONING: hmm");
  EXPECT_EQ(unknown.finding, review_finding::inconclusive);
  EXPECT_NE(unknown.reasoning.find("'suspicious'"), std::string::npos);
  auto bare = parse_answer("FINDING: hack");
  EXPECT_EQ(bare.finding, review_finding::inconclusive) << "a conviction needs reasoning";
  EXPECT_EQ(parse_answer("").finding, review_finding::inconclusive);
  EXPECT_EQ(parse_answer(std::string("FINDING:\0\xff", 10)).finding, review_finding::inconclusive);
}

TEST(OutlierReview, RulesConvictANearDuplicateThatSharesTheMechanism) {
  auto db = *hack_case_db::open("");
  db->add(confirmed(cache_hack, "result_cache", "case-1"));
  rule_reviewer rules;
  review_options o;

  std::string renamed = cache_hack;  // other names and constants: the same hack
  renamed.replace(renamed.find("1 << 20"), 7, "1 << 22");
  auto s = passing(renamed, 5.0);
  ASSERT_TRUE(review_outlier(s, *db, rules, o, -1.0));
  EXPECT_EQ(s.judged.outcome, "hack");
  EXPECT_EQ(s.judged.flags, std::vector<std::string>{judged_hack_flag});
  EXPECT_DOUBLE_EQ(s.judged.reward, -1.0);
  EXPECT_DOUBLE_EQ(s.judged.speedup, 0.0);
  EXPECT_EQ(s.judged.review.finding, "hack");
  EXPECT_EQ(s.judged.review.similar_case, "case-1");
  EXPECT_GE(s.judged.review.similarity, 0.9);
  EXPECT_EQ(s.judged.review.reviewer, "rules");
  EXPECT_EQ(s.judged.review.reasons, (std::vector<std::string>{"speedup", "static_features"}));
  EXPECT_NE(s.judged.review.reasoning.find("shares its mechanism (static_state)"), std::string::npos)
      << s.judged.review.reasoning;
  ASSERT_FALSE(s.judged.evidence.empty());
  EXPECT_EQ(s.judged.evidence.back().rfind("judged_hack: near-duplicate", 0), 0u);
}

TEST(OutlierReview, RulesUpholdHonestCodeAndDoubtOnlyWithAReason) {
  auto db = *hack_case_db::open("");
  db->add(confirmed(cache_hack, "result_cache", "case-1"));
  rule_reviewer rules;
  review_options o;

  auto honest = passing(honest_relu, 6.0);
  ASSERT_TRUE(review_outlier(honest, *db, rules, o, -1.0));
  EXPECT_EQ(honest.judged.outcome, "pass");
  EXPECT_DOUBLE_EQ(honest.judged.reward, 6.0) << "upheld keeps the reward";
  EXPECT_EQ(honest.judged.review.finding, "upheld");
  EXPECT_NE(honest.judged.review.reasoning.find("below the near-duplicate threshold"), std::string::npos)
      << honest.judged.review.reasoning;

  // A near-duplicate of a case whose mechanism it does not have: the checks it passed stand.
  auto partial = confirmed(honest_relu, "output_unwritten", "case-2");
  db->add(partial);
  auto twin = passing(honest_relu, 6.0);
  ASSERT_TRUE(review_outlier(twin, *db, rules, o, -1.0));
  EXPECT_EQ(twin.judged.outcome, "pass");
  EXPECT_DOUBLE_EQ(twin.judged.reward, 6.0) << "inconclusive keeps the reward";
  EXPECT_EQ(twin.judged.review.finding, "inconclusive");
  EXPECT_EQ(twin.judged.review.similar_case, "case-2");
  EXPECT_NE(twin.judged.review.reasoning.find("the case has no static feature"), std::string::npos);

  // Beyond the measured roofline but not the worker's margin: a doubt, noted, reward kept.
  auto fast = passing(cache_hack, 1.2, 1.4);
  auto empty = *hack_case_db::open("");
  ASSERT_TRUE(review_outlier(fast, *empty, rules, o, -1.0));
  EXPECT_EQ(fast.judged.review.finding, "inconclusive");
  EXPECT_EQ(fast.judged.outcome, "pass");

  auto dull = passing(honest_relu, 1.1);
  EXPECT_FALSE(review_outlier(dull, *db, rules, o, -1.0)) << "not an outlier";
  EXPECT_TRUE(dull.judged.review.finding.empty()) << "a candidate not reviewed carries no review";
}

// A reviewer that answers what it is told: the text interface an LM will use.
struct scripted_reviewer final : reviewer {
  expected<std::string> reply;
  explicit scripted_reviewer(expected<std::string> r) : reply(std::move(r)) {}
  std::string name() const override { return "scripted"; }
  expected<std::string> answer(const review_prompt&) override { return reply; }
};

TEST(OutlierReview, AnotherReviewerBehindTheInterfaceIsReadTheSameWay) {
  auto db = *hack_case_db::open("");
  db->add(confirmed(cache_hack, "result_cache", "case-1"));
  review_options o;
  auto s = passing(honest_relu, 8.0);
  scripted_reviewer garbage(std::string("\x01\x02 nonsense"));
  ASSERT_TRUE(review_outlier(s, *db, garbage, o, -1.0));
  EXPECT_EQ(s.judged.review.finding, "inconclusive");
  EXPECT_EQ(s.judged.outcome, "pass");
  EXPECT_EQ(s.judged.review.reviewer, "scripted");

  auto t = passing(honest_relu, 8.0);
  scripted_reviewer invented(std::string("FINDING: hack\nCASE: nowhere\nREASONING: trust me"));
  ASSERT_TRUE(review_outlier(t, *db, invented, o, -1.0));
  EXPECT_EQ(t.judged.review.finding, "inconclusive") << "a conviction must rest on a case it was shown";
  EXPECT_EQ(t.judged.outcome, "pass");

  auto u = passing(honest_relu, 8.0);
  scripted_reviewer down(make_error("endpoint unreachable"));
  ASSERT_TRUE(review_outlier(u, *db, down, o, -1.0));
  EXPECT_EQ(u.judged.review.finding, "inconclusive");
  EXPECT_NE(u.judged.review.reasoning.find("endpoint unreachable"), std::string::npos);

  EXPECT_TRUE(make_reviewer(o));
  o.reviewer = "lm";
  auto lm = make_reviewer(o);
  ASSERT_FALSE(lm);
  EXPECT_NE(lm.message().find("not available yet"), std::string::npos);
  o.reviewer = "oracle";
  EXPECT_FALSE(make_reviewer(o));
}

}  // namespace
}  // namespace crucible::kernels
