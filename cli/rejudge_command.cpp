#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "actors/options/evaluation_config_of.hpp"
#include "cli/commands.hpp"
#include "cli/target_config.hpp"
#include "runtime/config/config.hpp"
#include "runtime/hosting/terminal_progress.hpp"
#ifdef CRUCIBLE_WITH_PYTHON
#include "kernels/eval/evaluate.hpp"
#include "kernels/python/embedded_python.hpp"
#include "kernels/python/kernelbench_reference.hpp"
#include "kernels/python/kernelbench_suite.hpp"
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

// `device`: where the problem is read (< 0: the CPU); the evaluation's target is ec's.
kernels::rejudged_kernel rejudge_one(const kernels::published_kernel& k, const kernels::evaluation_config& ec,
                                     kernels::bench_runner& runner, int device) {
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
  auto task = kernels::kernelbench_task_from_source(k.name + ".py", k.problem_source, k.name, device);
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

// A checkout's problem, for naming a kernel's task as training does.
struct checkout_problem {
  std::string task, path, source;
};

// The kernels that pass as the sft stage's corpus (policies::read_sft_jsonl's lines), each named as a
// training run names its task: CUDA-L1's records carry only level and id, so the checkout gives the name,
// and a record whose Model is not the checkout's problem's (another version of the benchmark numbered it
// otherwise) is left out, named in `left_out`: its kernel would be trained under another problem's prompt.
std::string sft_jsonl(const std::vector<kernels::published_kernel>& list,
                      const std::vector<kernels::rejudged_kernel>& rows,
                      const std::map<std::pair<int, int>, checkout_problem>& problems,
                      std::vector<std::string>& left_out) {
  std::string out;
  left_out.clear();
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].outcome != kernels::wire_name(kernels::outcome::pass)) continue;
    auto p = problems.find({rows[i].level, rows[i].id});
    if (p == problems.end() || !kernels::same_model_class(p->second.source, list[i].problem_source)) {
      left_out.push_back(rows[i].name + (p == problems.end()
                                             ? " (no such problem in the checkout)"
                                             : " (its Model is not " + p->second.path + "'s)"));
      continue;
    }
    out += nlohmann::json{{"task", p->second.task},
                          {"code", list[i].candidate_source},
                          {"speedup", rows[i].speedup},
                          {"origin", rows[i].origin}}
               .dump() +
           "\n";
  }
  return out;
}

// Written whole or not at all (a reader never sees half a report): a temporary beside it, then a rename.
// The file's text; none when it cannot be opened.
std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

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
  // --sft-jsonl names each kernel's task as training does (kbN_ID_Name), which needs the checkout's names.
  std::map<std::pair<int, int>, checkout_problem> problems;
  std::vector<std::string> left_out;
  if (!args.sft_jsonl_path.empty()) {
    if (args.self_check) {
      std::cerr << "crucible rejudge: --sft-jsonl with --aa: the candidates are the problems themselves\n";
      return 2;
    }
    if (args.kernelbench.empty()) {
      std::cerr << "crucible rejudge: --sft-jsonl needs --kernelbench CHECKOUT: training names a task "
                   "kbN_ID_Name, and the records give only level and id\n";
      return 2;
    }
    auto scanned = kernels::scan_kernelbench(args.kernelbench, args.level);
    if (!scanned) {
      std::cerr << "crucible rejudge: --kernelbench: " << scanned.message() << "\n";
      return 2;
    }
    for (const auto& p : *scanned) {
      problems[{p.level, p.id}] = {p.task_name(), p.path, read_file(p.path).value_or("")};
    }
  }
  auto ec = actors::evaluation_config_of(*cfg);
  if (cuda) ec.worker.device = args.device >= 0 ? args.device : static_cast<int>(cfg->cuda.devices.front());
  kernels::bench_runner runner(ec.worker, ec.runner);
  kernels::rejudge_header h;
  h.source = args.self_check ? args.kernelbench : args.input;
  h.target = args.target;
  h.device = cuda ? kernels::python_cuda_device_name(ec.worker.device) : cpu_model();
  h.self_check = args.self_check;
  h.planned = list.size();
  // --resume: the kernels the report already has are kept, not judged again.
  std::map<std::pair<int, int>, kernels::rejudged_kernel> kept;
  std::vector<kernels::rejudged_kernel> kept_rows;
  if (args.resume) {
    if (args.json_path.empty()) {
      std::cerr << "crucible rejudge: --resume needs --json FILE, the report it goes on from\n";
      return 2;
    }
    if (auto text = read_file(args.json_path)) {  // none yet: the run starts the report
      auto got = kernels::read_rejudged_kernels(*text, h);
      if (!got) {
        std::cerr << "crucible rejudge: --resume: " << args.json_path << ": " << got.message() << "\n";
        return 2;
      }
      kept_rows = std::move(*got);
      for (const auto& r : kept_rows) kept[{r.level, r.id}] = r;
    }
    // The report keeps every kernel it had, those outside this run's --ids too.
    std::set<std::pair<int, int>> planned;
    for (const auto& k : list) planned.insert({k.level, k.id});
    for (const auto& [key, r] : kept) planned.insert(key);
    h.planned = planned.size();
  }
  std::vector<kernels::rejudged_kernel> rows;
  // The files are rewritten after every kernel: a run cut short (a time limit, a lost machine) keeps what it
  // measured. The same report, marked partial until the last kernel.
  auto write_reports = [&](bool partial) {
    const auto report = args.resume ? kernels::resumed_rows(kept_rows, rows) : rows;
    const auto summary = kernels::summarize_rejudged(report);
    const std::string md = kernels::rejudge_markdown(h, report, summary);
    if (!partial) std::cout << md;
    if (!args.markdown_path.empty() && !write_file(args.markdown_path, md)) {
      std::cerr << "crucible rejudge: cannot write " << args.markdown_path << "\n";
      return false;
    }
    if (!args.json_path.empty() &&
        !write_file(args.json_path, kernels::rejudge_json(h, report, summary) + "\n")) {
      std::cerr << "crucible rejudge: cannot write " << args.json_path << "\n";
      return false;
    }
    if (!args.sft_jsonl_path.empty() &&
        !write_file(args.sft_jsonl_path, sft_jsonl(list, rows, problems, left_out))) {
      std::cerr << "crucible rejudge: cannot write " << args.sft_jsonl_path << "\n";
      return false;
    }
    return true;
  };
  runtime::item_progress progress(args.self_check ? "A/A" : "re-judging", list.size(), "kernel");
  for (size_t i = 0; i < list.size(); ++i) {
    if (auto k = kept.find({list[i].level, list[i].id}); k != kept.end()) {
      rows.push_back(k->second);
      std::fprintf(stderr, "[%zu/%zu] %s: %s (kept from %s)\n", i + 1, list.size(), list[i].name.c_str(),
                   k->second.outcome.c_str(), args.json_path.c_str());
      continue;
    }
    const auto t0 = std::chrono::steady_clock::now();
    progress.at(i, list[i].name);
    rows.push_back(rejudge_one(list[i], ec, runner, cuda ? ec.worker.device : -1));
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
  if (!args.sft_jsonl_path.empty()) {
    const size_t passed = static_cast<size_t>(std::count_if(rows.begin(), rows.end(), [](const auto& r) {
      return r.outcome == kernels::wire_name(kernels::outcome::pass);
    }));
    std::fprintf(stderr, "sft corpus: %zu of %zu passing kernels in %s\n", passed - left_out.size(), passed,
                 args.sft_jsonl_path.c_str());
    for (const auto& l : left_out) std::fprintf(stderr, "  left out: %s\n", l.c_str());
  }
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
