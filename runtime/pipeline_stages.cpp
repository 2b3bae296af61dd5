#include "runtime/pipeline_stages.hpp"

#include <utility>

namespace crucible::runtime {

namespace {

const std::vector<std::pair<std::string, std::string>> stage_roles = {
    {"compile", "compiler"},
    {"benchmark", "benchmarker"},
    {"verify", "verifier"},
};

}  // namespace

std::string role_of_stage(const std::string& stage) {
  for (const auto& [s, r] : stage_roles)
    if (s == stage) return r;
  return stage;
}

std::string stage_of_role(const std::string& role) {
  for (const auto& [s, r] : stage_roles)
    if (r == role) return s;
  return role;
}

bool is_builtin_stage(const std::string& stage) {
  for (const auto& [s, r] : stage_roles)
    if (s == stage) return true;
  return false;
}

const std::vector<std::string>& builtin_stages() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& [s, r] : stage_roles) v.push_back(s);
    return v;
  }();
  return names;
}

}  // namespace crucible::runtime
