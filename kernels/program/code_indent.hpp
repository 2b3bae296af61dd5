#pragma once
// Both emitters' last step: generated code re-indented by brace depth, so a person reading a candidate sees
// its structure. Group emitters write unindented lines.
#include <string>

namespace crucible::kernels {

/// Two spaces per brace level; blank lines kept. The code must have no braces in strings or comments that
/// would mislead the count (emitted code has none).
std::string indent_code(const std::string& code);

}  // namespace crucible::kernels
