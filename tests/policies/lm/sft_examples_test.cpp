#include "policies/lm/sft_examples.hpp"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "policies/lm/answer_parser.hpp"
#include "tests/policies/test_tasks.hpp"

namespace crucible::policies {
namespace {

std::string kernel(const std::string& body) {
  return "#include <crucible_abi.h>\nextern \"C\" int crucible_forward(const cru_context* ctx, const "
         "cru_tensor* "
         "inputs, int32_t n_inputs, cru_tensor* outputs, int32_t n_outputs) {\n  float v = 1.0f;\n  " +
         body + "\n  return 0;\n}\n";
}

TEST(SftExamples, PlainVariedAndContrastiveExamplesAnswerWithTheirKernel) {
  std::map<std::string, task_spec> tasks = {{"softmax_scaled", testing::softmax_task()}};
  std::vector<sft_source> sources = {{"softmax_scaled", kernel("(void)v;"), "groups=[0..2]", 1.5},
                                     {"softmax_scaled", kernel("v += 1;"), "", 0.8},
                                     {"softmax_scaled", kernel("(void)v;"), "", 1.5},  // a duplicate
                                     {"no_such_task", kernel(""), "", 2.0}};
  sft_data_options o;
  o.variants = 1;
  o.contrastive = 1;
  auto ex = build_sft_examples(sources, tasks, "cpu", o);
  ASSERT_TRUE(ex) << ex.message();
  // Two distinct kernels: each alone and one variant; the faster one also as a contrastive answer.
  EXPECT_EQ(ex->size(), 5u);
  int contrastive = 0;
  for (const auto& e : *ex) {
    auto parsed = parse_answer(e.answer);
    EXPECT_EQ(parsed.problem, answer_problem::none) << parsed.reason;
    EXPECT_EQ(parsed.code, e.code);
    EXPECT_NE(e.answer.find("## Performance analysis"), std::string::npos);
    EXPECT_NE(e.answer.find("## Algorithm design"), std::string::npos);
    if (!e.prompt_.exemplars.empty()) {
      ++contrastive;
      EXPECT_LT(e.prompt_.exemplars[0].speedup, 1.5);
      EXPECT_NE(e.answer.find("0.80x"), std::string::npos) << e.answer;
      EXPECT_NE(e.answer.find("groups=[0..2]"), std::string::npos);
    }
  }
  EXPECT_EQ(contrastive, 1);
  EXPECT_FALSE(build_sft_examples({{"no_such_task", kernel(""), "", 1}}, tasks, "cpu", o));
}

// A KernelBench task's examples answer in Python: the fence, the wording, and variants varied as Python (a
// C lexer would re-lay a triple-quoted string or rename nothing).
TEST(SftExamples, AKernelBenchTasksExamplesAnswerWithItsModelNewInPython) {
  task_spec t;
  t.name = "kb1_2_Scaled_relu";
  t.module = "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n";
  const std::string model_new =
      "import torch\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        y = x * 2\n"
      "        return y\n";
  sft_data_options o;
  o.variants = 2;
  o.contrastive = 0;
  auto ex = build_sft_examples({{t.name, model_new, "", 1.2}}, {{t.name, t}}, "cuda", o);
  ASSERT_TRUE(ex) << ex.message();
  ASSERT_EQ(ex->size(), 3u);
  for (const auto& e : *ex) {
    EXPECT_NE(e.answer.find("```python\n"), std::string::npos) << e.answer;
    EXPECT_NE(e.answer.find("ModelNew below"), std::string::npos) << e.answer;
    EXPECT_EQ(e.answer.find("chain"), std::string::npos) << e.answer;
    auto parsed = parse_answer(e.answer, answer_form_of(t));
    EXPECT_EQ(parsed.problem, answer_problem::none) << parsed.reason;
    EXPECT_EQ(parsed.code, e.code);
    EXPECT_NE(e.code.find("class ModelNew(torch.nn.Module):"), std::string::npos) << e.code;
  }
  EXPECT_NE((*ex)[1].code, model_new);
}

TEST(SftExamples, UserJsonlIsReadAndBadLinesAreNamed) {
  const std::string path = ::testing::TempDir() + "/sft.jsonl";
  std::ofstream(path) << "{\"task\": \"softmax_scaled\", \"code\": \"int x;\", \"speedup\": 1.2}\n\n"
                      << "{\"task\": \"softmax_scaled\"}\n";
  auto r = read_sft_jsonl(path);
  ASSERT_FALSE(r);
  EXPECT_NE(r.message().find("sft.jsonl:3"), std::string::npos) << r.message();
  std::ofstream(path) << "{\"task\": \"softmax_scaled\", \"code\": \"int x;\", \"speedup\": 1.2}\n";
  auto ok = read_sft_jsonl(path);
  ASSERT_TRUE(ok) << ok.message();
  ASSERT_EQ(ok->size(), 1u);
  EXPECT_EQ((*ok)[0].source, "int x;");
  EXPECT_DOUBLE_EQ((*ok)[0].speedup, 1.2);
  EXPECT_FALSE(read_sft_jsonl(path + ".missing"));
}

}  // namespace
}  // namespace crucible::policies
