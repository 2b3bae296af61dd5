#include "policies/lm/answer_parser.hpp"

#include <gtest/gtest.h>

namespace crucible::policies {
namespace {

const char* good_code =
    "#include <crucible_abi.h>\n"
    "extern \"C\" int crucible_forward(const cru_context* ctx, const cru_tensor* in, int32_t n,\n"
    "                                 cru_tensor* out, int32_t m) { return 0; }\n";

TEST(AnswerParser, TheLastBlockWithTheEntryPointIsTheCode) {
  std::string answer =
      std::string("1. Performance analysis: ...\n```cpp\n// a sketch\nint helper();\n```\n") +
      "3. Code:\n```cuda\n" + good_code + "```\n";
  auto r = parse_answer(answer);
  EXPECT_EQ(r.problem, answer_problem::none) << r.reason;
  EXPECT_EQ(r.code, good_code);
  // A later block without the entry point (an example call) does not displace it.
  auto later = parse_answer(answer + "Usage:\n```\nrun();\n```\n");
  EXPECT_EQ(later.problem, answer_problem::none);
  EXPECT_EQ(later.code, good_code);
  // Blocks in other languages are prose, not code.
  auto py = parse_answer(std::string("```python\nprint(1)\n```\n```c++\n") + good_code + "```");
  EXPECT_EQ(py.problem, answer_problem::none);
}

TEST(AnswerParser, AnExternCBlockCountsAsCLinkageAndAnUnclosedFenceStillParses) {
  auto r = parse_answer(
      "```cpp\nextern \"C\" {\nint crucible_forward(const cru_context*, const cru_tensor*, int32_t, "
      "cru_tensor*, "
      "int32_t) { return 0; }\n}\n```");
  EXPECT_EQ(r.problem, answer_problem::none) << r.reason;
  auto cut = parse_answer(std::string("```cuda\n") + good_code);  // stopped at max tokens
  EXPECT_EQ(cut.problem, answer_problem::none);
}

TEST(AnswerParser, FormatFailuresSayWhat) {
  EXPECT_EQ(parse_answer("I would fuse the ops.").problem, answer_problem::no_code_block);
  EXPECT_EQ(parse_answer("```python\nx = 1\n```").problem, answer_problem::no_code_block);
  auto no_entry = parse_answer("```cpp\nint forward() { return 0; }\n```");
  EXPECT_EQ(no_entry.problem, answer_problem::no_entry_point);
  EXPECT_NE(no_entry.reason.find("crucible_forward"), std::string::npos);
  auto no_c = parse_answer(
      "```cpp\nint crucible_forward(const cru_context*, const cru_tensor*, int32_t, cru_tensor*, "
      "int32_t);\n```");
  EXPECT_EQ(no_c.problem, answer_problem::no_c_linkage);
}

// A KernelBench task's answer is a Python module: the last Python (or unlabelled) block with a module-level
// class ModelNew; C++ blocks and a ModelNew nested or only mentioned do not count.
TEST(AnswerParser, AKernelBenchAnswerIsThePythonBlockThatDefinesModelNew) {
  const std::string module =
      "import torch\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return "
      "x.relu()\n";
  auto r = parse_answer("Analysis.\n```python\n" + module + "```\nUsage:\n```python\nm = ModelNew()\n```\n",
                        answer_form::kernelbench_module);
  EXPECT_EQ(r.problem, answer_problem::none) << r.reason;
  EXPECT_EQ(r.code, module);
  EXPECT_EQ(parse_answer("```\nclass ModelNew:\n    pass\n```", answer_form::kernelbench_module).problem,
            answer_problem::none);
  auto cpp = parse_answer(std::string("```cpp\n") + good_code + "```", answer_form::kernelbench_module);
  EXPECT_EQ(cpp.problem, answer_problem::no_code_block);
  EXPECT_NE(cpp.reason.find("Python"), std::string::npos);
  auto nested =
      parse_answer("```python\ndef make():\n    class ModelNew: pass\n```", answer_form::kernelbench_module);
  EXPECT_EQ(nested.problem, answer_problem::no_entry_point);
  EXPECT_NE(nested.reason.find("class ModelNew"), std::string::npos);
  // The form follows the task: a task with a module wants Python.
  task_spec t;
  EXPECT_EQ(answer_form_of(t), answer_form::c_abi);
  t.module = "class Model: pass\n";
  EXPECT_EQ(answer_form_of(t), answer_form::kernelbench_module);
}

}  // namespace
}  // namespace crucible::policies
