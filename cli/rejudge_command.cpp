#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "actors/options/evaluation_config_of.hpp"
#include "cli/commands.hpp"
#include "cli/target_config.hpp"
#include "runtime/config/config.hpp"
#include "runtime/hosting/terminal_progress.hpp"
#ifdef CRUCIBLE_WITH_PYTHON
#include "kernels/eval/evaluate.hpp"
#include "kernels/python/embedded_python.hpp"
#include "kernels/python/kernelbench_reference.hpp"
#include "kernels/rejudge/rejudge_report.hpp"
#include "kernels/verify/verdict_vocabulary.hpp"
#endif

namespace crucible::cli {

#ifdef CRUCIBLE_WITH_PYTHON
namespace {

namespace fs = std::filesystem;

std::string first_line(const std::string& s) {
  return s.substr(0, s.find('\n'));
}

// The CPU the measurements ran on, for the report's header.
std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2) + ", one thread";
  return "this machine's CPU, one thread";
}

expected<std::vector<kernels::published_kernel>> read_input(const rejudge_args& args) {
  if (args.self_check) {
    if (args.kernelbench.empty()) return make_error("--aa needs --kernelbench CHECKOUT");
    if (!args.input.empty())
      return make_error("--aa takes no input: the checkout's problems are the candidates");
    return kernels::self_candidates(args.kernelbench, args.level);
  }
  if (args.input.empty()) return make_error("give CUDA-L1's JSON lines file, a folder of solutions, or --aa");
  std::error_code ec;
  if (fs::is_directory(args.input, ec)) {
    if (args.kernelbench.empty()) return make_error("a folder of solutions needs --kernelbench CHECKOUT");
    return kernels::read_solution_folder(args.input, args.kernelbench, args.level);
  }
  return kernels::read_cuda_l1_jsonl(args.input, args.level);
}

kernels::rejudged_kernel rejudge_one(const kernels::published_kernel& k, const kernels::evaluation_config& ec,
                                     kernels::bench_runner& runner) {
  kernels::rejudged_kernel row;
  row.level = k.level;
  row.id = k.id;
  row.name = k.name;
  row.origin = k.origin;
  row.claimed = k.claimed;
  row.claimed_vs_eager = k.claimed_vs_eager();
  if (k.candidate_source.empty()) {
    row.status = kernels::rejudge_status::no_candidate;
    row.outcome = wire_name(row.status);
    return row;
  }
  row.features = kernels::code_features(k.candidate_source);
  auto task = kernels::kernelbench_task_from_source(k.name + ".py", k.problem_source, k.name);
  if (!task) {
    row.status = kernels::rejudge_status::problem_error;
    row.outcome = wire_name(row.status);
    row.error = first_line(task.message());
    return row;
  }
  auto e = kernels::evaluate_source(*task, k.candidate_source, ec, &runner);
  row.outcome = e.judged.outcome;
  if (kernels::has_outcome(e.judged, kernels::outcome::pass)) {
    row.speedup = e.judged.speedup;
    row.speedup_vs_graph = e.bench.timing.speedup_vs_graph;
    row.speedup_vs_compile = e.bench.timing.speedup_vs_compile;
    row.speedup_vs_compile_ro = e.bench.timing.speedup_vs_compile_ro;
  }
  row.graph_ms = e.bench.timing.graph_ms_median;
  row.compile_ms = e.bench.timing.compile_ms_median;
  row.compile_ro_ms = e.bench.timing.compile_ro_ms_median;
  row.eager_ms = e.bench.timing.eager_ms_median;
  row.candidate_ms = e.bench.timing.candidate_ms_median;
  row.flags = e.judged.flags;
  row.peak_fraction = e.bench.peak_fraction;
  row.notes = e.bench.notes;
  if (!e.bench.error.empty())
    row.error = first_line(e.bench.error);
  else if (!e.compiled.ok)
    row.error = first_line(e.compiled.log);
  return row;
}

// Written whole or not at all (a reader never sees half a report): a temporary beside it, then a rename.
bool write_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".part";
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    if (!out.flush()) return false;
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  return !ec;
}

}  // namespace

int rejudge_command(const rejudge_args& args) {
  const bool cuda = args.target == "cuda";
  auto cfg = target_config(args.config_path, args.overrides, args.target);
  if (!cfg) {
    std::cerr << "crucible rejudge: " << cfg.message() << "\n";
    return 2;
  }
  auto kernels_in = read_input(args);
  if (!kernels_in) {
    std::cerr << "crucible rejudge: " << kernels_in.message() << "\n";
    return 2;
  }
  auto list = std::move(*kernels_in);
  if (!args.ids.empty()) {
    list.erase(std::remove_if(list.begin(), list.end(),
                              [&](const kernels::published_kernel& k) {
                                return std::find(args.ids.begin(), args.ids.end(), k.id) == args.ids.end();
                              }),
               list.end());
    if (list.empty()) {
      std::cerr << "crucible rejudge: no kernel has one of the --ids given\n";
      return 2;
    }
  }
  if (args.limit > 0 && list.size() > static_cast<size_t>(args.limit))
    list.resize(static_cast<size_t>(args.limit));
  auto ec = actors::evaluation_config_of(*cfg);
  if (cuda) ec.worker.device = args.device >= 0 ? args.device : static_cast<int>(cfg->cuda.devices.front());
  kernels::bench_runner runner(ec.worker, ec.runner);
  kernels::rejudge_header h;
  h.source = args.self_check ? args.kernelbench : args.input;
  h.target = args.target;
  h.device = cuda ? kernels::python_cuda_device_name(ec.worker.device) : cpu_model();
  h.self_check = args.self_check;
  h.planned = list.size();
  std::vector<kernels::rejudged_kernel> rows;
  // The files are rewritten after every kernel: a run cut short (a time limit, a lost machine) keeps what it
  // measured. The same report, marked partial until the last kernel.
  auto write_reports = [&](bool partial) {
    const auto summary = kernels::summarize_rejudged(rows);
    const std::string md = kernels::rejudge_markdown(h, rows, summary);
    if (!partial) std::cout << md;
    if (!args.markdown_path.empty() && !write_file(args.markdown_path, md)) {
      std::cerr << "crucible rejudge: cannot write " << args.markdown_path << "\n";
      return false;
    }
    if (!args.json_path.empty() &&
        !write_file(args.json_path, kernels::rejudge_json(h, rows, summary) + "\n")) {
      std::cerr << "crucible rejudge: cannot write " << args.json_path << "\n";
      return false;
    }
    return true;
  };
  runtime::item_progress progress(args.self_check ? "A/A" : "re-judging", list.size(), "kernel");
  for (size_t i = 0; i < list.size(); ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    progress.at(i, list[i].name);
    rows.push_back(rejudge_one(list[i], ec, runner));
    progress.erase();
    auto& r = rows.back();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.seconds = s;
    std::fprintf(stderr, "[%zu/%zu] %s: %s", i + 1, list.size(), r.name.c_str(), r.outcome.c_str());
    if (r.speedup > 0) std::fprintf(stderr, " %.3fx", r.speedup);
    for (const auto& f : r.flags) std::fprintf(stderr, " %s", f.c_str());
    std::fprintf(stderr, " (%.1f s)", s);
    if (!r.error.empty()) std::fprintf(stderr, ": %s", r.error.c_str());
    std::fprintf(stderr, "\n");
    if (i + 1 < list.size() && !write_reports(true)) return 1;
  }
  if (!write_reports(false)) return 1;
  return 0;
}

#else

int rejudge_command(const rejudge_args&) {
  std::cerr << "crucible rejudge: this build has no KernelBench support (it needs python3-dev, pybind11-dev "
               "and python3-torch at configure time)\n";
  return 2;
}

#endif

}  // namespace crucible::cli
