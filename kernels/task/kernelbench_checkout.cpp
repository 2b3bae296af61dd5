#include "kernels/task/kernelbench_checkout.hpp"

#include <algorithm>
#include <filesystem>
#include <regex>

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

}  // namespace crucible::kernels
