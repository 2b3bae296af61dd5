#include "kernels/python/kernelbench_suite.hpp"

#include <algorithm>
#include <filesystem>
#include <regex>

#include "kernels/python/embedded_python.hpp"
#include "kernels/python/kernelbench_reference.hpp"

namespace crucible::kernels {

namespace fs = std::filesystem;

std::string kernelbench_problem::task_name() const {
  return "kb" + std::to_string(level) + "_" + std::to_string(id) + "_" + name;
}

expected<std::vector<kernelbench_problem>> scan_kernelbench(const std::string& root, int level) {
  if (level < 0 || level > 4)
    return make_error("KernelBench levels are 1 to 4, not " + std::to_string(level));
  std::error_code ec;
  fs::path base = root;
  if (!fs::is_directory(base / "level1", ec) && fs::is_directory(base / "KernelBench" / "level1", ec))
    base /= "KernelBench";
  static const std::regex file_name(R"(^(\d+)_(.+)\.py$)");
  std::vector<kernelbench_problem> out;
  bool any_level = false;
  for (int l = 1; l <= 4; ++l) {
    const fs::path dir = base / ("level" + std::to_string(l));
    if (!fs::is_directory(dir, ec)) continue;
    any_level = true;
    if (level != 0 && l != level) continue;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      std::smatch m;
      const std::string file = entry.path().filename().string();
      if (!entry.is_regular_file() || !std::regex_match(file, m, file_name)) continue;
      out.push_back({l, std::stoi(m[1].str()), m[2].str(), entry.path().string()});
    }
  }
  if (!any_level)
    return make_error(root + ": no KernelBench level folder (level1 ... level4, or KernelBench/level1 ...)");
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.level != b.level ? a.level < b.level : a.id < b.id;
  });
  return out;
}

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
