// The wire form of pipeline stages: what a node receives for each stage, and how its answers fold back.
#include <gtest/gtest.h>

#include "messages/envelope.hpp"
#include "runtime/cluster/stage_codec.hpp"

namespace crucible::runtime {
namespace {

scored_candidate sample() {
  scored_candidate s;
  s.cand.id = "r0-g1-2";
  s.cand.task = "bias_gelu";
  s.cand.source = "int main() {}";
  s.compiled.ok = true;
  s.compiled.artifact = "/tmp/a.so";
  s.bench.status = "ok";
  s.bench.correct = true;
  s.bench.speedup_vs_eager = 1.7;
  s.judged.outcome = "pass";
  s.judged.evidence = {"verifier: clean"};
  s.judged.speedup = s.judged.reward = s.reward = 1.7;
  return s;
}

std::vector<std::string> kinds(const work_item& w) {
  std::vector<std::string> out;
  for (const auto& b : w.payload) out.push_back(decode(std::string_view(b.data(), b.size()))->kind);
  return out;
}

TEST(StageCodec, EachStageCarriesTheScoredCandidateAndThePiecesItsRequestTakes) {
  auto s = sample();
  EXPECT_EQ(kinds(encode_stage_work({"compile", s, 0}, "compiler", 60, 1)),
            (std::vector<std::string>{"scored_candidate", "candidate"}));
  auto b = encode_stage_work({"benchmark", s, 2.5}, "benchmarker", 60, 2);
  EXPECT_EQ(kinds(b), (std::vector<std::string>{"scored_candidate", "candidate", "compile_result"}));
  EXPECT_DOUBLE_EQ(b.args.at("best_seen"), 2.5);
  EXPECT_EQ(b.attempt, 2);
  EXPECT_EQ(kinds(encode_stage_work({"verify", s, 0}, "verifier", 60, 1)),
            (std::vector<std::string>{"scored_candidate", "candidate", "compile_result", "bench_result"}));
  auto req = decode_stage_work(b);
  ASSERT_TRUE(req) << req.message();
  EXPECT_EQ(req->stage, "benchmark");
  EXPECT_EQ(req->scored.cand.id, "r0-g1-2");
  EXPECT_DOUBLE_EQ(req->best_seen, 2.5);
}

// A node answers with the stage's slot alone, and the head folds it back into the candidate it holds.
TEST(StageCodec, ANodesAnswerCarriesTheSlotOfItsStage) {
  auto s = sample();
  auto kind_of = [](const work_result& r) {
    return decode(std::string_view(r.payload.at(0).data(), r.payload.at(0).size()))->kind;
  };
  work_item w;
  w.request_id = 11;
  const std::pair<const char*, const char*> slots[] = {
      {"compile", "compile_result"}, {"benchmark", "bench_result"}, {"source_audit", "scored_candidate"}};
  for (const auto& [stage, kind] : slots) {
    w.stage = stage;
    auto r = encode_stage_answer(w, s);
    EXPECT_EQ(r.request_id, 11u);
    EXPECT_EQ(r.status, "ok");
    ASSERT_EQ(r.payload.size(), 1u) << stage;
    EXPECT_EQ(kind_of(r), kind) << stage;
    auto back = sample();
    back.compiled = {};
    back.bench = {};
    ASSERT_TRUE(apply_stage_result(stage, r, back)) << stage;
    if (std::string(stage) == "compile") EXPECT_EQ(back.compiled.artifact, s.compiled.artifact);
    if (std::string(stage) == "benchmark") EXPECT_DOUBLE_EQ(back.bench.speedup_vs_eager, 1.7);
  }
}

TEST(StageCodec, WorkWithoutAScoredCandidateIsAnError) {
  work_item w;
  w.request_id = 7;
  w.stage = "compile";
  w.payload.push_back(encode_embedded(sample().cand));
  auto r = decode_stage_work(w);
  ASSERT_FALSE(r);
  EXPECT_NE(r.message().find("no scored_candidate"), std::string::npos);
  w.payload = {std::vector<char>{'x', 'y'}};
  EXPECT_FALSE(decode_stage_work(w));
}

TEST(StageCodec, AnswersFoldIntoTheirFieldAndWrongKindsAreErrors) {
  auto s = sample();
  work_result r;
  compile_result c;
  c.ok = false;
  c.log = "error: expected ';'";
  r.payload.push_back(encode_embedded(c));
  ASSERT_TRUE(apply_stage_result("compile", r, s));
  EXPECT_FALSE(s.compiled.ok);
  EXPECT_EQ(s.compiled.log, "error: expected ';'");
  auto st = apply_stage_result("benchmark", r, s);  // a compile_result is not a bench_result
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("expected 'bench_result'"), std::string::npos) << st.message();
  work_result failed;
  failed.status = "error";
  failed.error = "worker died";
  auto f = apply_stage_result("verify", failed, s);
  ASSERT_FALSE(f);
  EXPECT_NE(f.message().find("worker died"), std::string::npos);
  EXPECT_FALSE(apply_stage_result("verify", work_result{}, s)) << "an answer without a payload";
}

TEST(StageCodec, ASecondOpinionConvictsButNeverAcquits) {
  auto s = sample();
  verdict pass;
  pass.outcome = "pass";
  pass.evidence = {"py: fine"};
  work_result r;
  r.payload.push_back(encode_embedded(pass));
  ASSERT_TRUE(apply_stage_result("py_verifier", r, s));
  EXPECT_EQ(s.judged.outcome, "pass");
  EXPECT_EQ(s.judged.evidence, (std::vector<std::string>{"verifier: clean", "py: fine"}));

  s.judged.outcome = "hack";  // the built-in verifier convicted: a remote pass does not acquit
  s.judged.reward = -1;
  ASSERT_TRUE(apply_stage_result("py_verifier", r, s));
  EXPECT_EQ(s.judged.outcome, "hack");
  EXPECT_EQ(s.judged.reward, -1);

  auto t = sample();
  verdict hack;
  hack.outcome = "hack";
  hack.flags = {"suspicious_source:reads_clock"};
  hack.reward = -1;
  work_result h;
  h.payload.push_back(encode_embedded(hack));
  ASSERT_TRUE(apply_stage_result("py_verifier", h, t));
  EXPECT_EQ(t.judged.outcome, "hack");
  EXPECT_EQ(t.judged.flags, hack.flags);
  EXPECT_EQ(t.judged.evidence.front(), "verifier: clean") << "earlier evidence kept";

  // A pass that carries a review (a remote custom reviewer that upheld the verdict) stores the review.
  auto w = sample();
  verdict reviewed = pass;
  reviewed.review.finding = "upheld";
  reviewed.review.reasoning = "nothing similar";
  work_result rv;
  rv.payload.push_back(encode_embedded(reviewed));
  ASSERT_TRUE(apply_stage_result("audit", rv, w));
  EXPECT_EQ(w.judged.outcome, "pass");
  EXPECT_EQ(w.judged.review.finding, "upheld");
  EXPECT_EQ(w.judged.review.reasoning, "nothing similar");

  scored_candidate amended = sample();
  amended.judged.evidence.push_back("custom: looked");
  work_result a;
  a.payload.push_back(encode_embedded(amended));
  auto u = sample();
  ASSERT_TRUE(apply_stage_result("custom_stage", a, u));
  EXPECT_EQ(u.judged.evidence, (std::vector<std::string>{"verifier: clean", "custom: looked"}))
      << "the echoed evidence is not added twice";
}

// What the head measured or decided is never taken from the wire: a node's answer to a custom stage cannot
// raise a speedup or a reward, and a node's verdict for verify or the judge is refused outright.
TEST(StageCodec, ANodeCannotForgeWhatTheHeadMeasuredOrDecided) {
  const auto honest = sample();
  scored_candidate forged = honest;
  forged.bench.speedup_vs_eager = 9999;
  forged.bench.timing.candidate_ms_median = 0.001;
  forged.compiled.ok = !honest.compiled.ok;
  forged.judged.speedup = 9999;
  forged.judged.reward = 9999;
  forged.reward = 9999;
  work_result a;
  a.payload.push_back(encode_embedded(forged));
  auto s = honest;
  ASSERT_TRUE(apply_stage_result("custom_stage", a, s));
  EXPECT_EQ(s.bench.speedup_vs_eager, honest.bench.speedup_vs_eager);
  EXPECT_EQ(s.bench.timing.candidate_ms_median, honest.bench.timing.candidate_ms_median);
  EXPECT_EQ(s.compiled.ok, honest.compiled.ok);
  EXPECT_EQ(s.judged.speedup, honest.judged.speedup);
  EXPECT_EQ(s.judged.reward, honest.judged.reward);
  EXPECT_EQ(s.reward, honest.reward);

  // A conviction that claims more than the candidate had: convicted, at no more than before.
  verdict greedy;
  greedy.outcome = "hack";
  greedy.reward = 50;
  greedy.speedup = 50;
  work_result g;
  g.payload.push_back(encode_embedded(greedy));
  auto t = honest;
  ASSERT_TRUE(apply_stage_result("custom_stage", g, t));
  EXPECT_EQ(t.judged.outcome, "hack");
  EXPECT_LE(t.judged.reward, honest.judged.reward);
  EXPECT_LE(t.judged.speedup, honest.judged.speedup);

  verdict pass;
  pass.outcome = "pass";
  pass.speedup = pass.reward = 9999;
  work_result p;
  p.payload.push_back(encode_embedded(pass));
  for (const char* stage : {"verify", "judge"}) {
    auto v = honest;
    auto st = apply_stage_result(stage, p, v);
    ASSERT_FALSE(st) << stage;
    EXPECT_NE(st.message().find("made on the head"), std::string::npos) << st.message();
    EXPECT_EQ(v.judged.reward, honest.judged.reward);
  }
}

}  // namespace
}  // namespace crucible::runtime
