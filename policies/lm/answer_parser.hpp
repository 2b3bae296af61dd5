#pragma once
// The code of a language model's answer: the last fenced code block (```cpp, ```c++, ```cuda, ```cu, ```c
// or unlabelled) that defines the ABI's entry point. An answer with no block, or whose code has no
// `crucible_forward` with C linkage, is a format failure, found without compiling.
#include <string>

#include "messages/expected.hpp"

namespace crucible::policies {

enum class answer_problem { none, no_code_block, no_entry_point, no_c_linkage };

struct parsed_answer {
  answer_problem problem = answer_problem::none;
  std::string code;    ///< the chosen block's text (empty with a problem but no block)
  std::string reason;  ///< a sentence for the verdict when problem != none
};

parsed_answer parse_answer(const std::string& answer);

}  // namespace crucible::policies
