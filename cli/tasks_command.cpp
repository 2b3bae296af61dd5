#include <algorithm>
#include <cstdio>
#include <iostream>

#include "cli/commands.hpp"
#include "kernels/reference/task_linter.hpp"
#include "kernels/task/chain_shapes.hpp"
#include "kernels/task/task_loader.hpp"
#include "runtime/hosting/terminal_progress.hpp"
#ifdef CRUCIBLE_WITH_PYTHON
#include "kernels/python/embedded_python.hpp"
#include "kernels/python/kernelbench_module.hpp"
#include "kernels/python/kernelbench_reference.hpp"
#include "kernels/python/kernelbench_suite.hpp"
#endif

namespace crucible::cli {
namespace {

// KernelBench's problems with their inputs, output and eager time (median of --runs forward passes, each
// synchronized), and with --lint the linter's checks on outputs (on the CPU: the reference runs there). A
// problem that fails to load or run, or has a lint problem, is listed with it; the exit status is then 1.
int kernelbench_tasks(const tasks_args& args) {
#ifdef CRUCIBLE_WITH_PYTHON
  auto problems = kernels::scan_kernelbench(args.kernelbench, args.level);
  if (!problems) {
    std::cerr << "crucible tasks: " << problems.message() << "\n";
    return 2;
  }
  if (args.runs < 1) {
    std::cerr << "crucible tasks: --runs must be >= 1\n";
    return 2;
  }
  std::string device = args.device;
  if (device.empty()) device = kernels::python_cuda_available() ? "cuda" : "cpu";
  constexpr uint64_t seed = 1;
  int failed = 0, flagged = 0;
  std::vector<std::string> lint_lines;
  // The linter's verdict on a problem: "ok", or its problems counted (listed after the table).
  auto lint = [&](const kernels::kernelbench_problem& p) -> std::string {
    auto task = kernels::kernelbench_task(p.path, p.task_name());
    if (!task) return "error";
    auto ref = kernels::kernelbench_reference::create(*task);
    if (!ref) return "error";
    auto report = kernels::lint_outputs(*task, **ref);
    for (const auto& problem : report.problems) lint_lines.push_back(p.task_name() + ": " + problem);
    if (report.ok) return "ok";
    ++flagged;
    return std::to_string(report.problems.size()) + " problem(s)";
  };
  std::printf("| task | inputs | output | eager ms (%s) |%s\n|---|---|---|---|%s\n", device.c_str(),
              args.lint ? " lint |" : "", args.lint ? "---|" : "");
  runtime::item_progress progress(args.lint ? "measuring and linting" : "measuring", problems->size(),
                                  "problem");
  for (size_t i = 0; i < problems->size(); ++i) {
    const auto& p = (*problems)[i];
    progress.at(i, p.task_name());
    auto row = [&]() -> expected<std::string> {
      auto m = kernels::kernelbench_module::load(p.path);
      if (!m) return m.err();
      if (auto st = m->instantiate(seed, device); !st) return st.err();
      auto in = m->input_info(seed);
      if (!in) return in.err();
      auto out = m->output_info(seed);
      if (!out) return out.err();
      auto ms = m->eager_ms(seed, 1, args.runs);
      if (!ms) return ms.err();
      std::string inputs;
      for (const auto& t : *in) inputs += (inputs.empty() ? "" : ", ") + kernels::describe(t);
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.4g", *ms);
      return inputs + " | " + kernels::describe(*out) + " | " + buf;
    }();
    if (!row) ++failed;
    // An error's first line (Python's traceback follows it); `crucible eval` shows the whole.
    std::string text = row ? *row : "error: " + row.message().substr(0, row.message().find('\n'));
    if (args.lint) text += " | " + (row ? lint(p) : std::string("-"));
    progress.erase();
    std::printf("| %s | %s |\n", p.task_name().c_str(), text.c_str());
    std::fflush(stdout);
  }
  progress.erase();
  for (const auto& line : lint_lines) std::printf("%s\n", line.c_str());
  std::printf("%zu KernelBench problems in %s, %d failed", problems->size(), args.kernelbench.c_str(),
              failed);
  if (args.lint) std::printf(", %d with lint problems", flagged);
  std::printf("\n");
  return failed || flagged ? 1 : 0;
#else
  std::cerr << "crucible tasks --kernelbench: this build has no KernelBench support (it needs python3-dev, "
               "pybind11-dev and python3-torch at configure time)\n";
  return 2;
#endif
}

}  // namespace

int tasks_command(const tasks_args& args) {
  if (!args.kernelbench.empty()) return kernelbench_tasks(args);
  std::string dir = args.tasks_dir.empty() ? kernels::default_task_dir() : args.tasks_dir;
  auto suite = kernels::load_task_suite(dir, args.target);
  if (!suite) {
    std::cerr << "crucible tasks: " << suite.message() << "\n";
    return 2;
  }
  if (args.lint) {
    std::vector<kernels::lint_report> reports;
    bool ok = true;
    {
      runtime::item_progress progress("linting", suite->size(), "task");
      for (size_t i = 0; i < suite->size(); ++i) {
        progress.at(i, (*suite)[i].name);
        reports.push_back(kernels::lint_task((*suite)[i]));
        ok &= reports.back().ok;
      }
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
