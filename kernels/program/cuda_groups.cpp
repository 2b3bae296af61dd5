#include "kernels/program/cuda_groups.hpp"

#include <cstdlib>

namespace crucible::kernels {

int cuda_group_ctx::knob(const std::string& name) const {
  return std::atoi(knob_str(name).c_str());
}

std::string cuda_group_ctx::knob_str(const std::string& name) const {
  auto it = plan.knobs.find(name);
  return it == plan.knobs.end() ? std::string() : it->second;
}

bool cuda_group_ctx::fast_math() const {
  return knob_str("math") == "fast";
}

int cuda_group_ctx::input_index(const std::string& name) const {
  return kernels::input_index(task, name);
}

std::string cuda_group_ctx::signature() const {
  return "static int " + fn +
         "(const cru_context* ctx, const float* const* X, const float* in, float* out, float* ws) {\n";
}

int cuda_group_ctx::core() const {
  for (int i = plan.first; i <= plan.last; ++i)
    if (!is_elementwise(chain.ops[i])) return i;
  return plan.first;
}

}  // namespace crucible::kernels
