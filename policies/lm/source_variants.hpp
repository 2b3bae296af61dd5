#pragma once
// Varied copies of a correct kernel's source for the sft stage's data (CUDA-L1 augments its SFT set with
// executable variants): local identifiers renamed consistently, the indentation re-laid, and independent
// helper functions reordered. Each change keeps the program's meaning — names are swapped only where they
// are declared in the file and used as whole words outside strings, comments and member accesses — so a
// variant of a correct kernel is the same kernel.
#include <cstdint>
#include <string>
#include <vector>

namespace crucible::policies {

/// Up to `n` distinct variants of `source` (fewer when it offers little to vary), deterministic in `seed`;
/// none equals the source.
std::vector<std::string> source_variants(const std::string& source, int n, uint64_t seed);

/// A source with comments dropped and whitespace collapsed: two kernels that differ only in layout and
/// comments normalise alike (the novelty measure: is a correct answer in no training example).
std::string normalized_source(const std::string& source);

}  // namespace crucible::policies
