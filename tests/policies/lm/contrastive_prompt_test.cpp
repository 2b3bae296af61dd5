#include "policies/lm/contrastive_prompt.hpp"

#include <gtest/gtest.h>

#include "tests/policies/test_tasks.hpp"

namespace crucible::policies {
namespace {

prompt with_exemplars() {
  prompt p;
  p.task = testing::gemm_row_sum_task();
  p.target = "cuda";
  p.exemplars = {{"a", "", "__global__ void slow() {}\n", 0.8, 1},
                 {"b", "", "__global__ void fast() {}\n", 2.5, 4},
                 {"c", "", "__global__ void broken() {}\n", 0.0, 0}};
  return p;
}

TEST(ContrastivePrompt, ShowsTheTaskTheContractTheExemplarsFastestFirstAndTheThreeSections) {
  auto r = render_contrastive_prompt(with_exemplars());
  ASSERT_TRUE(r) << r.message();
  const auto& t = r->text;
  for (const char* part :
       {"## Task: gemm_bias_scale_row_sum", "def reference(x, W, b):", "# x: float32 [16, 32]", "(parameter)",
        "v = matmul(v, W)", "v = mul_scalar(v, s=0.5)", "-> [16]", "atol",
        "extern \"C\" int crucible_forward", "ctx->stream", "Performance analysis", "Algorithm design",
        "one fenced code block"})
    EXPECT_NE(t.find(part), std::string::npos) << part << "\n" << t;
  const auto fast = t.find("fast()"), slow = t.find("slow()"), broken = t.find("broken()");
  ASSERT_NE(fast, std::string::npos);
  EXPECT_LT(fast, slow);
  EXPECT_LT(slow, broken);
  EXPECT_NE(t.find("Kernel 1: 2.5x"), std::string::npos);
  EXPECT_NE(t.find("failed (incorrect or not compiled)"), std::string::npos);
  EXPECT_NE(t.find("```cuda"), std::string::npos);
  EXPECT_EQ(r->exemplars_shown, 3);
}

// The rule: whole exemplars leave, slowest first, until the prompt fits; never a cut kernel.
TEST(ContrastivePrompt, ExemplarsThatDoNotFitAreDroppedWholeSlowestFirst) {
  auto p = with_exemplars();
  auto full = render_contrastive_prompt(p);
  ASSERT_TRUE(full);
  prompt_budget chars;
  chars.count_tokens = [](const rendered_prompt& r) { return static_cast<int64_t>(r.text.size()); };
  chars.max_tokens = static_cast<int64_t>(full->text.size()) - 1;
  auto two = render_contrastive_prompt(p, chars);
  ASSERT_TRUE(two) << two.message();
  EXPECT_EQ(two->exemplars_shown, 2);
  EXPECT_EQ(two->exemplars_dropped, 1);
  EXPECT_EQ(two->text.find("broken()"), std::string::npos) << "the failed one goes first";
  EXPECT_NE(two->text.find("fast()"), std::string::npos);
  chars.max_tokens = 200;
  auto none = render_contrastive_prompt(p, chars);
  ASSERT_FALSE(none);
  EXPECT_NE(none.message().find("does not fit 200 tokens even without exemplars"), std::string::npos);
  prompt_budget no_counter;
  no_counter.max_tokens = 10;
  EXPECT_FALSE(render_contrastive_prompt(p, no_counter));
}

prompt with_attempts() {
  auto p = with_exemplars();
  p.attempts = {{"g1-0", "## Code\n```cuda\n__global__ void first_try() {}\n```",
                 "It did not compile:\n```\nerror: x\n```"},
                {"g2-3", "## Code\n```cuda\n__global__ void second_try() {}\n```",
                 "It is correct, with a verified speedup of 1.3x over PyTorch eager."}};
  return p;
}

// Refinement: each attempt is the assistant's turn and its result the user's next, oldest first; the flat
// text carries the same, for a plain-framed model or a completions endpoint.
TEST(ContrastivePrompt, AttemptsBecomeTurnsWithTheirResults) {
  auto r = render_contrastive_prompt(with_attempts());
  ASSERT_TRUE(r) << r.message();
  ASSERT_EQ(r->turns.size(), 5u);
  const std::vector<std::string> roles = {"user", "assistant", "user", "assistant", "user"};
  for (size_t i = 0; i < roles.size(); ++i) EXPECT_EQ(r->turns[i].role, roles[i]);
  EXPECT_NE(r->turns[0].content.find("Kernel 1: 2.5x"), std::string::npos);
  EXPECT_NE(r->turns[1].content.find("first_try"), std::string::npos);
  EXPECT_NE(r->turns[2].content.find("did not compile"), std::string::npos);
  EXPECT_NE(r->turns[2].content.find("Improve on it"), std::string::npos);
  EXPECT_NE(r->turns[4].content.find("1.3x"), std::string::npos);
  EXPECT_EQ(r->attempts_shown, 2);
  const auto& t = r->text;
  const auto first = t.find("## Your attempt 1\n## Code"), second = t.find("## Your attempt 2");
  ASSERT_NE(first, std::string::npos) << t;
  EXPECT_LT(t.find("first_try"), t.find("second_try"));
  EXPECT_LT(first, second);
  EXPECT_NE(t.find("## What came of attempt 2\nIt is correct"), std::string::npos);
  // Without attempts: one user turn, the text itself.
  auto plain = render_contrastive_prompt(with_exemplars());
  ASSERT_TRUE(plain);
  ASSERT_EQ(plain->turns.size(), 1u);
  EXPECT_EQ(plain->turns[0].content, plain->text);
}

// The rule extended: exemplars go first (slowest first), then attempts (oldest first).
TEST(ContrastivePrompt, ExemplarsLeaveBeforeAttemptsAndOldAttemptsBeforeNewOnes) {
  auto p = with_attempts();
  auto full = render_contrastive_prompt(p);
  ASSERT_TRUE(full);
  prompt_budget chars;
  chars.count_tokens = [](const rendered_prompt& r) { return static_cast<int64_t>(r.text.size()); };
  chars.max_tokens = static_cast<int64_t>(full->text.size()) - 1;
  auto r = render_contrastive_prompt(p, chars);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->exemplars_shown, 2);
  EXPECT_EQ(r->attempts_shown, 2);
  p.exemplars.clear();
  auto no_exemplars = render_contrastive_prompt(p);
  ASSERT_TRUE(no_exemplars);
  chars.max_tokens = static_cast<int64_t>(no_exemplars->text.size()) - 1;
  p = with_attempts();
  r = render_contrastive_prompt(p, chars);
  ASSERT_TRUE(r) << r.message();
  EXPECT_EQ(r->exemplars_shown, 0);
  EXPECT_EQ(r->attempts_shown, 1);
  EXPECT_EQ(r->attempts_dropped, 1);
  EXPECT_EQ(r->text.find("first_try"), std::string::npos) << "the oldest attempt goes first";
  EXPECT_NE(r->text.find("second_try"), std::string::npos);
  ASSERT_EQ(r->turns.size(), 3u);
}

TEST(ContrastivePrompt, TheCpuTargetAsksForCpp) {
  auto p = with_exemplars();
  p.target = "cpu";
  p.exemplars.clear();
  auto r = render_contrastive_prompt(p);
  ASSERT_TRUE(r);
  EXPECT_NE(r->text.find(".cpp file (C++17, CPU)"), std::string::npos);
  EXPECT_NE(r->text.find("None yet: write the first."), std::string::npos);
  EXPECT_EQ(r->text.find("ctx->stream"), std::string::npos);
}

// A KernelBench task: its module as written, KernelBench's contract for ModelNew, exemplars in Python.
TEST(ContrastivePrompt, AKernelBenchTaskShowsItsModuleAndAsksForModelNew) {
  prompt p;
  p.task.name = "kb1_2_Scaled_relu";
  p.task.description = "relu(x) * scale";
  p.task.module =
      "class Model(nn.Module):\n    def forward(self, x):\n        return torch.relu(x) * self.scale\n";
  p.task.inputs = {{"x", {4, 64}, "float32"}};
  p.task.atol = p.task.rtol = 1e-2;
  p.target = "cpu";
  p.exemplars = {{"a", "", "class ModelNew(nn.Module):\n    pass\n", 1.2, 1}};
  auto r = render_contrastive_prompt(p);
  ASSERT_TRUE(r) << r.message();
  const auto& t = r->text;
  for (const char* part : {"## Task: kb1_2_Scaled_relu", "relu(x) * scale",
                           "```python\nclass Model(nn.Module):", "return torch.relu(x) * self.scale",
                           "x float32 [4, 64]", "atol 0.01", "class ModelNew(nn.Module)", "get_init_inputs",
                           "Kernel 1: 1.2x\n```python\n", "Algorithm design"})
    EXPECT_NE(t.find(part), std::string::npos) << part << "\n" << t;
  EXPECT_EQ(t.find("crucible_forward"), std::string::npos) << "no C ABI for a module task";
  EXPECT_STREQ(code_fence_language(p.task, "cuda"), "python");
  EXPECT_STREQ(code_fence_language(testing::gemm_row_sum_task(), "cuda"), "cuda");
}

TEST(ContrastivePrompt, AnInvalidTaskIsAnError) {
  auto p = with_exemplars();
  p.task.ops[0].args = {"nope"};
  EXPECT_FALSE(render_contrastive_prompt(p));
}

}  // namespace
}  // namespace crucible::policies
