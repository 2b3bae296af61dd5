#include "kernels/python/kernelbench_suite.hpp"

#include "kernels/python/embedded_python.hpp"
#include "kernels/python/kernelbench_reference.hpp"

namespace crucible::kernels {

expected<std::vector<task_spec>> load_kernelbench_tasks(const std::string& root, int level,
                                                        const std::function<bool(const std::string&)>& wanted,
                                                        int device) {
  auto problems = scan_kernelbench(root, level);
  if (!problems) return problems.err();
  if (device >= 0 && !python_cuda_available()) device = -1;
  std::vector<task_spec> out;
  for (const auto& p : *problems) {
    const std::string name = p.task_name();
    if (wanted && !wanted(name)) continue;
    auto t = kernelbench_task(p.path, name, device);
    if (!t)
      return make_error(name + ": " + t.message() + "\n(leave it out with tasks.exclude: [" + name + "])");
    out.push_back(std::move(*t));
  }
  return out;
}

}  // namespace crucible::kernels
