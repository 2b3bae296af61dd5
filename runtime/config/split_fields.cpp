#include "runtime/config/split_fields.hpp"

namespace crucible::runtime {

std::vector<std::string> split_fields(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : s) {
    if (ch == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  out.push_back(cur);
  return out;
}

}  // namespace crucible::runtime
