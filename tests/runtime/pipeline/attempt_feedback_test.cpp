#include "runtime/pipeline/attempt_feedback.hpp"

#include <gtest/gtest.h>

namespace crucible::runtime {
namespace {

scored_candidate scored(const std::string& outcome) {
  scored_candidate c;
  c.cand.id = "g-1";
  c.cand.source = "extern \"C\" int crucible_forward() { return 0; }";
  c.judged.outcome = outcome;
  return c;
}

// Each outcome that says something about the code is told back in a sentence the policy can act on.
TEST(AttemptFeedback, EachOutcomeIsToldBack) {
  auto compile = scored("compile_error");
  compile.compiled.log = "k.cu(4): error: identifier \"y\" is undefined\n" + std::string(3000, 'z');
  auto a = attempt_of(compile, "cuda");
  ASSERT_TRUE(a);
  EXPECT_NE(a->feedback.find("did not compile"), std::string::npos);
  EXPECT_NE(a->feedback.find("identifier \"y\" is undefined"), std::string::npos);
  EXPECT_NE(a->feedback.find("[... cut]"), std::string::npos);
  EXPECT_LT(a->feedback.size(), 2000u) << "a long log is cut to its head";
  EXPECT_EQ(a->answer.rfind("```cuda\n", 0), 0u) << "a bare source is fenced";

  auto wrong = scored("incorrect");
  wrong.bench.max_abs_err = 0.25;
  EXPECT_NE(attempt_of(wrong, "cpu")->feedback.find("max abs error 0.25"), std::string::npos);
  auto hack = scored("hack");
  hack.judged.flags = {"input_mutated", "output_unwritten"};
  EXPECT_NE(attempt_of(hack, "cpu")->feedback.find("input_mutated, output_unwritten"), std::string::npos);
  auto pass = scored("pass");
  pass.judged.speedup = 1.87;
  pass.cand.answer = "## Performance analysis\n...";
  auto p = attempt_of(pass, "cpu");
  EXPECT_NE(p->feedback.find("1.87x"), std::string::npos);
  EXPECT_EQ(p->answer, pass.cand.answer) << "a language model's whole answer is its turn";
  auto format = scored("format");
  format.cand.format_error = "no fenced code block";
  EXPECT_NE(attempt_of(format, "cpu")->feedback.find("no fenced code block"), std::string::npos);
  auto crash = scored("crash");
  crash.bench.error = "SIGSEGV in crucible_forward\nbacktrace...";
  EXPECT_NE(attempt_of(crash, "cpu")->feedback.find("crashed: SIGSEGV in crucible_forward"),
            std::string::npos);
  EXPECT_NE(attempt_of(scored("timeout"), "cpu")->feedback.find("time limit"), std::string::npos);
}

// What failed on our side, or never ran, says nothing about the code; an unknown outcome neither.
TEST(AttemptFeedback, InfrastructureFailuresAreNotFedBack) {
  EXPECT_FALSE(attempt_of(scored("error"), "cpu"));
  EXPECT_FALSE(attempt_of(scored("abandoned"), "cpu"));
  EXPECT_FALSE(attempt_of(scored("no_such_outcome"), "cpu"));
}

}  // namespace
}  // namespace crucible::runtime
