#pragma once
// CUDA-L1's contrastive prompt as text for a language model: the task (its reference chain written out as
// readable code with every input's shape and dtype, the output's shape, the tolerances), the candidate ABI
// the answer must implement, earlier candidates for the task with their source and verified speedup, and the
// instruction to answer in three sections — performance analysis, algorithm design, code.
//
// Fitting a context: exemplars are dropped whole, the slowest first, until the prompt's token count is
// within the budget; code is never cut mid-way (a truncated kernel teaches broken code). A prompt that does
// not fit even without exemplars is an error.
#include <cstdint>
#include <functional>
#include <string>

#include "messages/expected.hpp"
#include "messages/prompt.hpp"

namespace crucible::policies {

struct prompt_budget {
  int64_t max_tokens = 0;  ///< 0: no limit
  /// Tokens of a text under the model's tokenizer (required when max_tokens > 0).
  std::function<int64_t(const std::string&)> count_tokens;
};

struct rendered_prompt {
  std::string text;
  int32_t exemplars_shown = 0;
  int32_t exemplars_dropped = 0;  ///< to fit the budget
};

/// The language tag of a code block of `target`'s source ("cuda" or "cpp"), in prompts and answers alike.
const char* code_fence_language(const std::string& target);

/// The task alone: the reference chain as code, inputs, output shape, tolerances (also the judge's view).
expected<std::string> render_task(const task_spec& task, const std::string& target);

expected<rendered_prompt> render_contrastive_prompt(const prompt& p, const prompt_budget& budget = {});

}  // namespace crucible::policies
