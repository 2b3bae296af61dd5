#include "kernels/program/emit_source.hpp"

#include "kernels/program/emit_cpu.hpp"
#include "kernels/program/emit_cuda.hpp"

namespace crucible::kernels {

expected<std::string> emit_source(std::string_view target, const task_spec& task, const program& p) {
  if (target == "cpu") return emit_cpu(task, p);
  if (target == "cuda") return emit_cuda(task, p);
  return make_error("emitter: no emitter for target '" + std::string(target) + "' (have: cpu, cuda)");
}

}  // namespace crucible::kernels
