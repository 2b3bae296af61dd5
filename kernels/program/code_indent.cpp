#include "kernels/program/code_indent.hpp"

#include <algorithm>

namespace crucible::kernels {

std::string indent_code(const std::string& code) {
  std::string out;
  int depth = 0;
  size_t pos = 0;
  while (pos < code.size()) {
    size_t end = code.find('\n', pos);
    if (end == std::string::npos) end = code.size();
    std::string line = code.substr(pos, end - pos);
    pos = end + 1;
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos) {
      out += "\n";
      continue;
    }
    line = line.substr(first);
    int opens = 0, closes = 0;
    for (char c : line) opens += c == '{', closes += c == '}';
    const int here = line[0] == '}' ? depth - 1 : depth;
    out += std::string(2 * std::max(here, 0), ' ') + line + "\n";
    depth = std::max(depth + opens - closes, 0);
  }
  return out;
}

}  // namespace crucible::kernels
