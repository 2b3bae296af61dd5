#include "runtime/hosting/role_registry.hpp"

namespace crucible::runtime {

void role_registry::add(const std::string& role, role_factory factory) {
  factories_[role] = std::move(factory);
}

const role_factory* role_registry::find(const std::string& role) const {
  auto it = factories_.find(role);
  return it == factories_.end() ? nullptr : &it->second;
}

std::vector<std::string> role_registry::roles() const {
  std::vector<std::string> out;
  for (const auto& [name, f] : factories_) out.push_back(name);
  return out;
}

}  // namespace crucible::runtime
