#pragma once
// A candidate's source with comments removed, so the static checks (judge.cpp) and the similarity of sources
// (source_similarity.cpp) read code, not prose: one lexer of comments, strings and raw strings for both.
#include <string>

namespace crucible::kernels {

/// The source in two forms: `text` keeps string literals (include paths, asm bodies), `code` blanks their
/// contents so a "std::thread" inside a string is not code. Newlines are kept so line numbers survive.
struct stripped_source {
  std::string text;
  std::string code;
};

stripped_source strip_source(const std::string& src);

}  // namespace crucible::kernels
