#pragma once
// Splitting config paths ("a.b.c"), command-line lists ("0,1") and Slurm host lists on one separator.
#include <string>
#include <vector>

namespace crucible::runtime {

/// The fields of `s` between occurrences of `sep`, empty ones included ("a,,b" -> a, "", b; "" -> "").
std::vector<std::string> split_fields(const std::string& s, char sep);

}  // namespace crucible::runtime
