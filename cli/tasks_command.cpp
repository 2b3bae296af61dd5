#include <algorithm>
#include <cstdio>
#include <iostream>

#include "cli/commands.hpp"
#include "kernels/reference/task_linter.hpp"
#include "kernels/task/chain_shapes.hpp"
#include "kernels/task/task_loader.hpp"

namespace crucible::cli {

int tasks_command(const tasks_args& args) {
  std::string dir = args.tasks_dir.empty() ? kernels::default_task_dir() : args.tasks_dir;
  auto suite = kernels::load_task_suite(dir, args.target);
  if (!suite) {
    std::cerr << "crucible tasks: " << suite.message() << "\n";
    return 2;
  }
  if (args.lint) {
    std::vector<kernels::lint_report> reports;
    bool ok = true;
    for (const auto& t : *suite) {
      reports.push_back(kernels::lint_task(t));
      ok &= reports.back().ok;
    }
    std::cout << kernels::format_task_table(reports, *suite);
    return ok ? 0 : 1;
  }
  int width = 28;  // the CUDA suite's names are longer than the CPU suite's
  for (const auto& t : *suite) width = std::max(width, static_cast<int>(t.name.size()));
  std::printf("%-*s %-14s %-22s %-18s %s\n", width, "task", "family", "input", "output", "ops");
  for (const auto& t : *suite) {
    auto shapes = kernels::infer_shapes(t);
    std::string ops;
    for (const auto& op : t.ops) ops += (ops.empty() ? "" : " > ") + op.op;
    std::printf("%-*s %-14s %-22s %-18s %s\n", width, t.name.c_str(), t.family.c_str(),
                kernels::shape_str(t.inputs[0].shape).c_str(),
                shapes ? kernels::shape_str(shapes->output()).c_str() : "?", ops.c_str());
  }
  std::printf("%zu tasks for target %s in %s\n", suite->size(), args.target.c_str(), dir.c_str());
  return 0;
}

}  // namespace crucible::cli
