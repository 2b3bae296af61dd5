#pragma once
// How alike two candidate sources are, for retrieving confirmed hacks like a candidate (the judge stage's
// case database). Renaming a variable, reformatting, re-commenting or changing a constant is free for whoever
// writes a hack, so the comparison is over normalised tokens: comments and whitespace gone, identifiers and
// numbers mapped to placeholders. What the code calls from outside (qualified names such as std::thread, and
// the names on preprocessor lines) keeps its name: changing that changes what the code does.
#include <cstdint>
#include <string>
#include <vector>

namespace crucible::kernels {

/// The normalised token stream: keywords and punctuation as written, other identifiers "$", numbers "#",
/// string and character literals '"' and '\''; identifiers beside "::" and on preprocessor lines kept.
std::vector<std::string> normalized_tokens(const std::string& source);

/// A source's token shingles (runs of `shingle_size` normalised tokens), hashed, sorted and unique.
struct source_fingerprint {
  std::vector<uint64_t> shingles;
  size_t tokens = 0;
};

inline constexpr size_t shingle_size = 5;

source_fingerprint fingerprint(const std::string& source);

/// Jaccard similarity of the shingle sets, in [0, 1]: 1 for sources equal up to names, numbers, comments
/// and layout; 0 when either is empty.
double similarity(const source_fingerprint& a, const source_fingerprint& b);

}  // namespace crucible::kernels
