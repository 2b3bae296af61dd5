#pragma once
// Terse builders for inline task_specs, shared by every test folder that writes its own small tasks.
#include <map>
#include <string>
#include <vector>

#include "messages/task.hpp"

namespace crucible::testing {

inline tensor_spec input(std::string name, std::vector<int64_t> shape, bool param = false) {
  tensor_spec t;
  t.name = std::move(name);
  t.shape = std::move(shape);
  t.param = param;
  return t;
}

inline op_spec op(std::string name, std::vector<std::string> args = {},
                  std::map<std::string, double> attrs = {}) {
  return op_spec{std::move(name), std::move(args), std::move(attrs)};
}

}  // namespace crucible::testing
