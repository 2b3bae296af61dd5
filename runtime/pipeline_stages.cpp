#include "runtime/pipeline_stages.hpp"

#include <algorithm>
#include <utility>

namespace crucible::runtime {

namespace {

const std::vector<std::pair<std::string, std::string>> stage_roles = {
    {"compile", "compiler"},
    {"benchmark", "benchmarker"},
    {"verify", "verifier"},
};

// The stages that give verdicts: the built-in verify and the judge's second look.
const std::vector<std::string> verdict_stages = {"verify", "judge"};

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

bool stage_stays_on_head(const std::string& stage) {
  return std::find(verdict_stages.begin(), verdict_stages.end(), stage) != verdict_stages.end();
}

std::vector<std::string> head_only_roles() {
  std::vector<std::string> roles;
  for (const auto& s : verdict_stages) roles.push_back(role_of_stage(s));
  return roles;
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
