#pragma once
// CUDA-L1's contrastive prompt as text for a language model: the task (its reference chain written out as
// readable code with every input's shape and dtype, the output's shape, the tolerances), the candidate ABI
// the answer must implement, earlier candidates for the task with their source and verified speedup, and the
// instruction to answer in three sections — performance analysis, algorithm design, code.
//
// With refinement on (replay.refine_turns), the prompt goes on as a conversation: each earlier attempt is the
// assistant's turn, and what came of it (compile error, failed check, verdict or speedup) the user's next,
// with the instruction to improve on it.
//
// Fitting a context: exemplars are dropped whole, the slowest first, then attempts, the oldest first, until
// the prompt's token count is within the budget; code is never cut mid-way (a truncated kernel teaches
// broken code). A prompt that does not fit even without exemplars and attempts is an error.
#include <cstdint>
#include <functional>
#include <string>

#include "messages/expected.hpp"
#include "messages/prompt.hpp"
#include "policies/lm/chat_template.hpp"

namespace crucible::policies {

struct rendered_prompt {
  /// The whole prompt as one text (what a plain-framed model and a completions endpoint read): the task,
  /// the exemplars and the instruction, then each attempt with what came of it.
  std::string text;
  /// The same as a conversation: the user's first turn, then per attempt the assistant's (its answer) and
  /// the user's (its result and the instruction to improve). One user turn when no attempt is shown.
  std::vector<chat_message> turns;
  int32_t exemplars_shown = 0;
  int32_t exemplars_dropped = 0;  ///< to fit the budget
  int32_t attempts_shown = 0;
  int32_t attempts_dropped = 0;  ///< to fit the budget
};

struct prompt_budget {
  int64_t max_tokens = 0;  ///< 0: no limit
  /// Tokens of a rendered prompt as the model reads it (required when max_tokens > 0).
  std::function<int64_t(const rendered_prompt&)> count_tokens;
};

/// The language tag of a code block of a candidate for `task` on `target` ("python" for a KernelBench task,
/// else "cuda" or "cpp"), in prompts and answers alike.
const char* code_fence_language(const task_spec& task, const std::string& target);

/// The task alone: the reference chain as code (a KernelBench task: its module as written), inputs, output
/// shape, tolerances, and the contract an answer implements (also the judge's view).
expected<std::string> render_task(const task_spec& task, const std::string& target);

expected<rendered_prompt> render_contrastive_prompt(const prompt& p, const prompt_budget& budget = {});

}  // namespace crucible::policies
