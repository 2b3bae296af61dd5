#pragma once
// Varied copies of a correct Python answer (a KernelBench ModelNew) for the sft stage's data, as
// source_variants does for C: names bound by assignment renamed consistently, and the indentation re-laid
// in another step. Each change keeps the module's meaning: a name is renamed only where Python sees it as
// that variable (never an attribute after '.', a keyword argument, a parameter, a class attribute, or a name
// any string mentions, f-strings included), and only logical lines are re-indented (a triple-quoted
// string's text, such as load_inline's CUDA source, is its value and stays as written).
#include <cstdint>
#include <string>
#include <vector>

namespace crucible::policies {

/// Up to `n` distinct variants of a Python `source` (fewer when it offers little to vary), deterministic in
/// `seed`; none equals the source.
std::vector<std::string> python_source_variants(const std::string& source, int n, uint64_t seed);

/// A Python source with comments dropped and whitespace outside strings collapsed (the novelty measure).
std::string normalized_python_source(const std::string& source);

/// An answer's code normalized as its language is (Python or C/CUDA): the sft stage's and the stage
/// reports' novelty key, so that both sides normalize alike.
std::string normalized_code(const std::string& source, bool python);

}  // namespace crucible::policies
