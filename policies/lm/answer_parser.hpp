#pragma once
// The code of a language model's answer: the last fenced code block that defines the entry point. For a
// C-ABI task, a ```cpp, ```c++, ```cuda, ```cu, ```c or unlabelled block with `crucible_forward` of C
// linkage; for a KernelBench task, a ```python (or unlabelled) block that defines `class ModelNew`. An
// answer with no such block is a format failure, found without compiling.
#include <string>

#include "messages/expected.hpp"
#include "messages/task.hpp"

namespace crucible::policies {

/// What an answer must be: a C-ABI kernel, or a KernelBench module (ModelNew) for a task with a module.
enum class answer_form { c_abi, kernelbench_module };
answer_form answer_form_of(const task_spec& task);

enum class answer_problem { none, no_code_block, no_entry_point, no_c_linkage };

struct parsed_answer {
  answer_problem problem = answer_problem::none;
  std::string code;    ///< the chosen block's text (empty with a problem but no block)
  std::string reason;  ///< a sentence for the verdict when problem != none
};

parsed_answer parse_answer(const std::string& answer, answer_form form = answer_form::c_abi);

}  // namespace crucible::policies
