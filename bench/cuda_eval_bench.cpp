// The CUDA evaluation engine's speed and fidelity on one GPU (configs/gpu.yaml's settings).
//
//   cuda_eval_bench throughput [per_task] [compilers] [max_tasks]   evaluations per GPU-minute end to end
//   (nvcc compile,
//       correctness, timing) with the artifact cache cold, then warm, for the eager program and `per_task`
//       random programs of every CUDA task; a pool of `compilers` threads compiles while one benchmark
//       worker measures, as in a run. Prints how busy the benchmarker was (time inside evaluations over
//       wall time: what the compiler pool must keep near 1).
//   cuda_eval_bench fidelity [repeats] [out.json] [tasks]   the same artifact measured `repeats` times in
//       separate evaluations, for a fused program of several tasks (seven families, or the comma-separated
//       list given): the coefficient of variation of the
//       reported speedup and of each side's time, and the artifacts and times in out.json for
//       bench/cuda_timing_crosscheck.py.
//   Any argument key=value overrides configs/gpu.yaml (as --set does), e.g. benchmark.warmup_ms=50.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/options/benchmark_section.hpp"
#include "actors/options/compiler_section.hpp"
#include "kernels/eval/evaluate.hpp"
#include "kernels/eval/timing_stats.hpp"
#include "kernels/program/emit_source.hpp"
#include "kernels/program/program_space.hpp"
#include "kernels/task/chain_shapes.hpp"
#include "kernels/task/task_loader.hpp"
#include "runtime/config/config.hpp"
#include "runtime/config/split_fields.hpp"

namespace {

using namespace crucible;
namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

struct item {
  const task_spec* task;
  std::string id, source;
  compile_result compiled;
};

struct setup {
  runtime::config cfg;
  std::vector<task_spec> suite;
};

std::vector<std::string> overrides;  // key=value arguments

setup load() {
  auto cfg = runtime::parse_config(runtime::embedded_gpu_config(), overrides, "embedded configs/gpu.yaml");
  auto suite = kernels::load_task_suite(kernels::default_task_dir(), "cuda");
  if (!cfg || !suite) {
    std::fprintf(stderr, "setup failed: %s\n", !cfg ? cfg.message().c_str() : suite.message().c_str());
    std::exit(1);
  }
  return {*cfg, *suite};
}

kernels::worker_options worker_of(const runtime::config& cfg) {
  auto w = cfg.section<actors::benchmark_section>().worker;
  w.device = static_cast<int>(cfg.cuda.devices.front());
  return w;
}

// One pass over the items: `compilers` threads compile into `cache`, the benchmark thread measures each as
// soon as it is compiled. Returns {wall s, busy s, evaluated, passed}.
struct pass_result {
  double wall = 0, busy = 0, compile_cpu = 0;
  int evaluated = 0, passed = 0, compile_failed = 0;
  std::map<std::string, double> phase_ms;  ///< summed over the evaluations that reported their phases
  int phased = 0;
  int reruns = 0;                       ///< variance-gate re-runs of the buckets, summed
  std::map<std::string, int> gate_off;  ///< evaluations that timed launches from some call on, by why
  std::map<std::string, int> evidence;  ///< evidence kinds among these (generated, honest) programs
  int starts = 0;                       ///< workers that began serving in the pass (outliers re-measured)
  double start_wait = 0;                ///< seconds the benchmarker waited for them to be ready
};

// Why the worker stopped gating calls, from its "launches timed with the calls from here on: WHY" note.
void add_gate_notes(const bench_result& r, pass_result& pr) {
  const std::string prefix = "launches timed with the calls from here on: ";
  for (const auto& n : r.notes)
    if (n.rfind(prefix, 0) == 0) ++pr.gate_off[n.substr(prefix.size(), 60)];
}

// The worker's "phases_ms:" note ("setup 1.2, correctness 30, timing 250 (fresh values 9, checks 20), ..."):
// each word followed by a number is a phase. Where an evaluation's time goes, so each check's cost shows.
void add_phases(const bench_result& r, pass_result& pr) {
  for (const auto& n : r.notes) {
    if (n.rfind("phases_ms: ", 0) != 0) continue;
    std::istringstream in(n.substr(11));
    std::string word, label;  // the words since the last number name the next one: "fresh values" 9
    while (in >> word) {
      while (!word.empty() && (word.back() == ',' || word.back() == ')' || word.back() == ';'))
        word.pop_back();
      if (!word.empty() && word.front() == '(') word.erase(0, 1);
      if (word.empty()) continue;
      char* end = nullptr;
      double v = std::strtod(word.c_str(), &end);
      if (end && *end == '\0') {
        if (!label.empty()) pr.phase_ms[label] += v;
        label.clear();
      } else {
        label += (label.empty() ? "" : "_") + word;
      }
    }
    ++pr.phased;
    return;
  }
}

pass_result run_pass(std::vector<item>& items, const runtime::config& cfg, const std::string& cache,
                     int compilers, kernels::bench_runner& runner) {
  kernels::compiler_options copt = cfg.section<actors::compiler_section>();
  copt.cache_dir = cache;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<size_t> ready;
  std::atomic<size_t> next{0};
  std::atomic<int> done_compilers{0};
  pass_result pr;
  double compile_s = 0;
  const int starts0 = runner.worker().starts();
  const double wait0 = runner.worker().start_wait_s();
  auto t0 = clock_type::now();
  std::vector<std::thread> pool;
  for (int i = 0; i < compilers; ++i)
    pool.emplace_back([&] {
      for (size_t j; (j = next++) < items.size();) {
        items[j].compiled = kernels::compile_source(items[j].id, items[j].source, copt);
        std::lock_guard<std::mutex> lock(mu);
        compile_s += items[j].compiled.seconds;
        ready.push_back(j);
        cv.notify_one();
      }
      ++done_compilers;
      cv.notify_one();
    });
  for (;;) {
    size_t j;
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return !ready.empty() || done_compilers == compilers; });
      if (ready.empty()) break;
      j = ready.front();
      ready.pop_front();
    }
    auto& it = items[j];
    if (!it.compiled.ok) {
      ++pr.compile_failed;
      continue;
    }
    eval_request req;
    req.candidate_id = it.id;
    req.task = *it.task;
    req.artifact = it.compiled.artifact;
    req.options = cfg.section<actors::benchmark_section>().eval;
    req.target = "cuda";
    auto tb = clock_type::now();
    auto r = runner.run(req);
    pr.busy += seconds_since(tb);
    ++pr.evaluated;
    add_phases(r, pr);
    add_gate_notes(r, pr);
    pr.reruns += r.timing.reruns;
    for (const auto& e : r.evidence) ++pr.evidence[e.substr(0, e.find(':'))];
    if (const char* path = std::getenv("CRUCIBLE_BENCH_NOTES")) {  // every evaluation's notes, for diagnosis
      nlohmann::json line = {
          {"id", it.id},      {"task", it.task->name},         {"status", r.status}, {"evidence", r.evidence},
          {"notes", r.notes}, {"speedup", r.speedup_vs_eager}, {"wall_s", r.wall_s}};
      std::lock_guard<std::mutex> lock(mu);
      std::ofstream(path, std::ios::app) << line.dump() << "\n";
    }
    pr.phase_ms["worker_total"] += 1e3 * r.wall_s;
    if (r.status == "ok" && r.correct && r.evidence.empty()) ++pr.passed;
  }
  for (auto& th : pool) th.join();
  pr.wall = seconds_since(t0);
  pr.compile_cpu = compile_s;
  pr.starts = runner.worker().starts() - starts0;
  pr.start_wait = runner.worker().start_wait_s() - wait0;
  return pr;
}

int throughput(int per_task, int compilers, size_t max_tasks) {
  auto s = load();
  if (max_tasks > 0 && s.suite.size() > max_tasks) {
    // Every k-th task, so families stay mixed.
    std::vector<task_spec> picked;
    for (size_t i = 0; i < s.suite.size() && picked.size() < max_tasks; i += s.suite.size() / max_tasks)
      picked.push_back(s.suite[i]);
    s.suite = picked;
  }
  std::vector<item> items;
  std::mt19937_64 rng(11);
  for (const auto& t : s.suite) {
    std::vector<kernels::program> progs = {kernels::eager_program(t, "cuda")};
    for (int k = 0; k < per_task; ++k) progs.push_back(kernels::random_program(t, rng, "cuda"));
    for (const auto& p : progs) {
      auto src = kernels::emit_source("cuda", t, p);
      if (!src) continue;
      items.push_back({&t, "bench-" + std::to_string(items.size()), *src, {}});
    }
  }
  fs::path cache = fs::temp_directory_path() / ("crucible-cuda-bench-" + std::to_string(::getpid()));
  fs::remove_all(cache);
  kernels::bench_runner runner(worker_of(s.cfg), s.cfg.section<actors::benchmark_section>().runner);
  {  // start the worker (CUDA and LibTorch load) outside the measurement, as a long run amortizes it
    item warm{&s.suite.front(), "warmup", items.front().source, {}};
    std::vector<item> one = {warm};
    run_pass(one, s.cfg, (cache / "warmup").string(), 1, runner);
  }
  std::printf(
      "%zu candidates (%zu tasks: eager + %d random programs each), %d compiler threads, 1 GPU worker\n\n",
      items.size(), s.suite.size(), per_task, compilers);
  std::printf(
      "| cache | candidates | wall s | evals / GPU-minute | benchmarker busy | passed | compile s (sum) |\n");
  std::printf(
      "|-------|-----------:|-------:|-------------------:|-----------------:|-------:|----------------:|\n");
  std::vector<std::pair<std::string, pass_result>> passes;
  for (const char* which : {"cold", "warm"}) {
    auto pr = run_pass(items, s.cfg, (cache / "artifacts").string(), compilers, runner);
    std::printf("| %-5s | %10d | %6.1f | %18.1f | %15.0f%% | %6d | %15.1f |\n", which, pr.evaluated, pr.wall,
                60.0 * pr.evaluated / pr.wall, 100.0 * pr.busy / pr.wall, pr.passed, pr.compile_cpu);
    std::fflush(stdout);
    passes.emplace_back(which, std::move(pr));
  }
  // Where an evaluation's time goes: the mean per evaluation of each phase the worker reports, and the
  // benchmarker's wait per evaluation (worker time plus the request's round trip).
  std::printf("\n| cache | ms per evaluation: busy | worker |");
  const auto& keys = passes.front().second.phase_ms;
  for (const auto& [k, v] : keys)
    if (k != "worker_total") std::printf(" %s |", k.c_str());
  std::printf("\n|-------|------:|------:|");
  for (const auto& [k, v] : keys)
    if (k != "worker_total") std::printf("------:|");
  std::printf("\n");
  for (const auto& [which, pr] : passes) {
    const double n = std::max(1, pr.evaluated), np = std::max(1, pr.phased);
    std::printf("| %-5s | %.1f | %.1f |", which.c_str(), 1e3 * pr.busy / n,
                pr.phase_ms.count("worker_total") ? pr.phase_ms.at("worker_total") / n : 0.0);
    for (const auto& [k, v] : keys)
      if (k != "worker_total") std::printf(" %.1f |", pr.phase_ms.count(k) ? pr.phase_ms.at(k) / np : 0.0);
    std::printf("\n");
  }
  // What shaped those times: buckets re-run by the variance gate, evaluations whose launches were timed from
  // some call on (the gate's watchdog had to open), and evidence against these honest programs.
  for (const auto& [which, pr] : passes) {
    std::printf("\n%s: %d workers started (%.1f s waiting for them to be ready); %d bucket re-runs;",
                which.c_str(), pr.starts, pr.start_wait, pr.reruns);
    int off = 0;
    for (const auto& [why, n] : pr.gate_off) off += n;
    std::printf(" %d evaluations timed launches from some call on", off);
    for (const auto& [why, n] : pr.gate_off) std::printf("; %d: %s", n, why.c_str());
    std::printf("\n%s: evidence against these generated programs:", which.c_str());
    if (pr.evidence.empty()) std::printf(" none");
    for (const auto& [kind, n] : pr.evidence) std::printf(" %s %d", kind.c_str(), n);
    std::printf("\n");
  }
  fs::remove_all(cache);
  return 0;
}

int fidelity(int repeats, const std::string& out_path, const std::string& task_list) {
  auto s = load();
  // Tasks of different families whose eager time is >= 0.1 ms; a fused or library program for each.
  std::vector<std::string> names = {"k1_softsign", "k1_softmax",      "k1_layer_norm", "k2_gemm_bias_gelu",
                                    "k1_mse_loss", "k2_conv_bn_relu", "k1_cumsum"};
  if (!task_list.empty()) names = runtime::split_fields(task_list, ',');
  fs::path cache = fs::temp_directory_path() / ("crucible-cuda-fidelity-" + std::to_string(::getpid()));
  kernels::compiler_options copt = s.cfg.section<actors::compiler_section>();
  copt.cache_dir = cache.string();
  kernels::bench_runner runner(worker_of(s.cfg), s.cfg.section<actors::benchmark_section>().runner);
  nlohmann::json out = nlohmann::json::array();
  for (const auto& o : overrides) std::printf("override: %s\n", o.c_str());
  std::printf(
      "| task | program | eager ms | graph ms | candidate ms | speedup (median of %d) | speedup CV | "
      "vs graph CV | eager ms CV | graph ms CV | candidate ms CV |\n",
      repeats);
  std::printf(
      "|------|---------|---------:|---------:|-------------:|------:|-----:|-----:|-----:|-----:|-----:|\n");
  for (const auto& name : names) {
    const task_spec* task = nullptr;
    for (const auto& t : s.suite)
      if (t.name == name) task = &t;
    if (!task) continue;
    // The fused program: every op fused into as few groups as the space allows, baseline strategies.
    kernels::program p = kernels::eager_program(*task, "cuda");
    auto b = kernels::program_builder::create(*task, "cuda");
    if (b) {
      while (!b->done()) {
        const auto& d = b->next();
        std::string pick = d.options.front();
        if (d.slot.rfind("fuse:", 0) == 0 &&
            std::find(d.options.begin(), d.options.end(), "fuse") != d.options.end())
          pick = "fuse";
        b->choose(pick);
      }
      p = b->result();
    }
    auto src = kernels::emit_source("cuda", *task, p);
    if (!src) continue;
    auto compiled = kernels::compile_source("fidelity-" + name, *src, copt);
    if (!compiled.ok) {
      std::printf("| %s | compile failed | | | | | | |\n", name.c_str());
      continue;
    }
    std::vector<double> speedups, graph_speedups, cand, eager, graph;
    for (int k = 0; k < repeats; ++k) {
      eval_request req;
      req.candidate_id = "fidelity-" + name + "-" + std::to_string(k);
      req.task = *task;
      req.artifact = compiled.artifact;
      req.options = s.cfg.section<actors::benchmark_section>().eval;
      req.target = "cuda";
      auto r = runner.run(req);
      if (const char* path =
              std::getenv("CRUCIBLE_BENCH_NOTES")) {  // every evaluation's notes, for diagnosis
        nlohmann::json line = {{"id", req.candidate_id},
                               {"task", name},
                               {"status", r.status},
                               {"evidence", r.evidence},
                               {"notes", r.notes},
                               {"speedup", r.speedup_vs_eager},
                               {"candidate_ms", r.timing.candidate_ms_median}};
        std::ofstream(path, std::ios::app) << line.dump() << "\n";
      }
      if (!r.timed) {
        std::fprintf(stderr, "%s: not timed (%s %s)\n", name.c_str(), r.status.c_str(), r.error.c_str());
        break;
      }
      speedups.push_back(r.speedup_vs_eager);
      graph_speedups.push_back(r.speedup_vs_graph);
      cand.push_back(r.timing.candidate_ms_median);
      eager.push_back(r.timing.eager_ms_median);
      graph.push_back(r.timing.graph_ms_median);
    }
    if (speedups.empty()) continue;
    std::printf("| %s | %s | %.4f | %.4f | %.4f | %.3fx | %.2f%% | %.2f%% | %.2f%% | %.2f%% | %.2f%% |\n",
                name.c_str(), kernels::to_text(p).c_str(), kernels::median(eager), kernels::median(graph),
                kernels::median(cand), kernels::median(speedups), 100 * kernels::cv(speedups),
                100 * kernels::cv(graph_speedups), 100 * kernels::cv(eager), 100 * kernels::cv(graph),
                100 * kernels::cv(cand));
    std::fflush(stdout);
    nlohmann::json inputs = nlohmann::json::array();
    for (const auto& in : task->inputs) inputs.push_back({{"name", in.name}, {"shape", in.shape}});
    auto shapes = kernels::infer_shapes(*task);
    out.push_back({{"task", name},
                   {"artifact", compiled.artifact},
                   {"inputs", inputs},
                   {"output_shape", shapes ? shapes->output() : kernels::shape_t{}},
                   {"candidate_ms", kernels::median(cand)},
                   {"eager_ms", kernels::median(eager)},
                   {"speedups", speedups},
                   {"speedups_vs_graph", graph_speedups},
                   {"eager_ms_each", eager},
                   {"graph_ms_each", graph},
                   {"candidate_ms_each", cand}});
  }
  if (!out_path.empty()) std::ofstream(out_path) << out.dump(2) << "\n";
  return 0;
}

}  // namespace

int main(int raw_argc, char** raw_argv) {
  std::vector<char*> args;
  for (int i = 0; i < raw_argc; ++i) {
    if (i > 0 && std::string(raw_argv[i]).find('=') != std::string::npos)
      overrides.emplace_back(raw_argv[i]);
    else
      args.push_back(raw_argv[i]);
  }
  const int argc = static_cast<int>(args.size());
  char** argv = args.data();
  std::string mode = argc > 1 ? argv[1] : "throughput";
  if (mode == "throughput")
    return throughput(argc > 2 ? std::atoi(argv[2]) : 1,
                      argc > 3 ? std::atoi(argv[3])
                               : std::max(1, static_cast<int>(std::thread::hardware_concurrency()) - 2),
                      argc > 4 ? static_cast<size_t>(std::atoi(argv[4])) : 0);
  if (mode == "fidelity")
    return fidelity(argc > 2 ? std::atoi(argv[2]) : 10, argc > 3 ? argv[3] : "", argc > 4 ? argv[4] : "");
  std::fprintf(
      stderr,
      "usage: cuda_eval_bench throughput [per_task] [compilers] [max_tasks] | fidelity [repeats] [out.json]"
      " [key=value ...]\n");
  return 2;
}
