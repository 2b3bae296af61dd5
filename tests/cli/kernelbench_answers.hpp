#pragma once
// A served model's answers for the training runs on KernelBench tasks (train_kernelbench_test.cpp, and
// cuda/ on the device): for the tests' kb1_2_Scaled_relu, in turn a correct ModelNew, one that writes its
// input in place and one without code; and what every run must show of them once judged.
#include <set>
#include <string>
#include <utility>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "runtime/storage/replay_store.hpp"

namespace crucible::test {

inline std::string kernelbench_answer(const std::string& code) {
  return "## Performance analysis\nOne pass.\n## Algorithm design\nclamp, then scale.\n## Code\n```python\n" +
         code + "```\n";
}

inline const std::string kernelbench_correct = kernelbench_answer(
    "import torch\nimport torch.nn as nn\n\nclass ModelNew(nn.Module):\n    def __init__(self, scale):\n"
    "        super().__init__()\n        self.scale = scale\n\n    def forward(self, x):\n"
    "        return torch.clamp_min(x, 0.0) * self.scale\n");
inline const std::string kernelbench_in_place = kernelbench_answer(
    "import torch\nimport torch.nn as nn\n\nclass ModelNew(nn.Module):\n    def __init__(self, scale):\n"
    "        super().__init__()\n        self.scale = scale\n\n    def forward(self, x):\n"
    "        return torch.relu_(x).mul_(self.scale)\n");
inline const std::string kernelbench_no_code = "## Performance analysis\nI would fuse the two ops.\n";

/// The last prompt kernelbench_answers was asked.
inline std::string kernelbench_last_prompt;

/// n answers per request, in turn the three kinds above.
inline std::pair<int, std::string> kernelbench_answers(const nlohmann::json& req) {
  kernelbench_last_prompt = req.value("prompt", "");
  nlohmann::json choices = nlohmann::json::array();
  const std::string options[] = {kernelbench_correct, kernelbench_in_place, kernelbench_no_code};
  for (int i = 0; i < req.value("n", 1); ++i)
    choices.push_back({{"index", i},
                       {"text", options[i % 3]},
                       {"logprobs", {{"tokens", {"a"}}, {"token_logprobs", {-0.5}}}},
                       {"finish_reason", "stop"}});
  return {200, nlohmann::json{{"choices", choices}}.dump()};
}

/// The run in `dir` (its output `out`) judged each kind as it is: the correct answer passes as Python, the
/// in-place one is a hack (input_mutated), the one without code a format verdict; the prompt showed the
/// problem's module and asked for ModelNew.
inline void expect_each_kernelbench_answer_judged(const std::string& dir, const std::string& out) {
  EXPECT_NE(kernelbench_last_prompt.find("## Task: kb1_2_Scaled_relu"), std::string::npos)
      << kernelbench_last_prompt;
  EXPECT_NE(kernelbench_last_prompt.find("return torch.relu(x) * self.scale"), std::string::npos)
      << kernelbench_last_prompt;
  EXPECT_NE(kernelbench_last_prompt.find("class ModelNew(nn.Module)"), std::string::npos)
      << kernelbench_last_prompt;
  auto scored = runtime::replay_store::read_scored(dir + "/replay.sqlite");
  ASSERT_TRUE(scored) << scored.message();
  ASSERT_GE(scored->size(), 3u) << out;
  std::set<std::string> outcomes;
  for (const auto& c : *scored) {
    outcomes.insert(c.judged.outcome);
    if (c.cand.source.find("clamp_min") != std::string::npos) {
      EXPECT_EQ(c.cand.language, "py");
      EXPECT_EQ(c.judged.outcome, "pass") << c.cand.id << " " << c.bench.error;
    } else if (c.cand.source.find("relu_") != std::string::npos) {
      EXPECT_EQ(c.judged.outcome, "hack") << c.cand.id;
      EXPECT_EQ(c.judged.flags, std::vector<std::string>{"input_mutated"}) << c.cand.id;
    } else {
      EXPECT_EQ(c.judged.outcome, "format") << c.cand.id;
      EXPECT_NE(c.cand.format_error.find("no fenced Python code block"), std::string::npos)
          << c.cand.format_error;
    }
  }
  EXPECT_EQ(outcomes, (std::set<std::string>{"pass", "hack", "format"})) << out;
}

}  // namespace crucible::test
