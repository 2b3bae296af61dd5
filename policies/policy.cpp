#include "policies/policy.hpp"

#include <utility>

namespace crucible::policies {
namespace {

const std::pair<policy_kind, const char*> kind_names[] = {
    {policy_kind::program, "program"},
    {policy_kind::lm, "lm"},
    {policy_kind::remote, "remote"},
};

}  // namespace

const char* wire_name(policy_kind k) {
  for (const auto& [kind, name] : kind_names)
    if (kind == k) return name;
  return "?";
}

std::optional<policy_kind> parse_policy_kind(std::string_view name) {
  for (const auto& [kind, n] : kind_names)
    if (name == n) return kind;
  return std::nullopt;
}

}  // namespace crucible::policies
