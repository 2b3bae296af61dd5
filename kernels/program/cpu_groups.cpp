#include "kernels/program/cpu_groups.hpp"

#include <cstdlib>

namespace crucible::kernels {

bool cpu_group_ctx::poly() const {
  auto it = plan.knobs.find("math");
  return it != plan.knobs.end() && it->second == "poly";
}

int cpu_group_ctx::knob(const std::string& name) const {
  auto it = plan.knobs.find(name);
  return it == plan.knobs.end() ? 0 : std::atoi(it->second.c_str());
}

std::string cpu_group_ctx::signature() const {
  return "static void " + fn +
         "(const float* const* X, const float* __restrict in, float* __restrict out, float* __restrict ws) "
         "{\n";
}

}  // namespace crucible::kernels
