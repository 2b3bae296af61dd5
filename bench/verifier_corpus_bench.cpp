// The verifier against a labelled corpus (DESIGN.md §6, "measured"): every candidate of
// tests/data/corpus/<target>/{hack,honest}/ is compiled, measured and judged exactly as `crucible eval` does,
// and the table says, per class, how many hacks were caught (earned no speedup reward: any outcome but pass)
// and how many honest kernels were falsely flagged (outcome hack) or lost their reward otherwise.
//
//   verifier_corpus_bench [--target cpu|cuda] [--corpus DIR] [--only SUBSTRING] [--json FILE]
//                         [--min-detection F] [--max-false-flags F] [--set key=value]...
// Exits 1 when --min-detection or --max-false-flags is given and not met (CI runs the CPU corpus so).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "actors/options/evaluation_config_of.hpp"
#include "kernels/eval/evaluate.hpp"
#include "kernels/task/task_loader.hpp"
#include "runtime/config/config.hpp"

namespace fs = std::filesystem;
using namespace crucible;

namespace {

struct entry {
  std::string path, label, cls, task, target;
};

// "// corpus: label=hack class=result_cache task=bias_gelu target=cpu" on the first line.
bool parse_header(const std::string& path, entry& e) {
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line) || line.rfind("// corpus:", 0) != 0) return false;
  std::istringstream fields(line.substr(10));
  for (std::string kv; fields >> kv;) {
    auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
    if (k == "label") e.label = v;
    if (k == "class") e.cls = v;
    if (k == "task") e.task = v;
    if (k == "target") e.target = v;
  }
  e.path = path;
  return !e.label.empty() && !e.cls.empty() && !e.task.empty();
}

struct tally {
  int n = 0, caught = 0, flagged = 0, passed = 0;
  std::map<std::string, int> outcomes;
};

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (c == '\n') {
      o += "\\n";
      continue;
    }
    o += c;
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  std::string target = "cpu", corpus = std::string(CRUCIBLE_SOURCE_DIR) + "/tests/data/corpus", only,
              json_path;
  double min_detection = -1, max_false = -1;
  std::vector<std::string> overrides;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--target")
      target = next();
    else if (a == "--corpus")
      corpus = next();
    else if (a == "--only")
      only = next();
    else if (a == "--json")
      json_path = next();
    else if (a == "--min-detection")
      min_detection = std::atof(next().c_str());
    else if (a == "--max-false-flags")
      max_false = std::atof(next().c_str());
    else if (a == "--set")
      overrides.push_back(next());
    else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  overrides.insert(overrides.begin(), "target=" + target);
  const bool cuda = target == "cuda";
  auto cfg = runtime::parse_config(cuda ? runtime::embedded_gpu_config() : runtime::embedded_default_config(),
                                   overrides, "verifier_corpus_bench");
  if (!cfg) {
    std::fprintf(stderr, "config: %s\n", cfg.message().c_str());
    return 2;
  }
  auto suite = kernels::load_task_suite(kernels::default_task_dir(), target);
  if (!suite) {
    std::fprintf(stderr, "tasks: %s\n", suite.message().c_str());
    return 2;
  }
  std::vector<entry> entries;
  for (const char* label : {"hack", "honest"}) {
    fs::path dir = fs::path(corpus) / target / label;
    if (!fs::exists(dir)) continue;
    for (const auto& f : fs::directory_iterator(dir)) {
      entry e;
      if (!f.is_regular_file() || !parse_header(f.path().string(), e)) continue;
      if (!only.empty() && e.path.find(only) == std::string::npos) continue;
      entries.push_back(e);
    }
  }
  std::sort(entries.begin(), entries.end(), [](const entry& a, const entry& b) { return a.path < b.path; });
  if (entries.empty()) {
    std::fprintf(stderr, "no corpus entries under %s/%s\n", corpus.c_str(), target.c_str());
    return 2;
  }

  auto ec = actors::evaluation_config_of(*cfg);
  ec.worker.worker_path = std::string(CRUCIBLE_BINARY_DIR) + "/crucible-eval-worker";
  if (cuda) ec.worker.device = static_cast<int>(cfg->cuda.devices.front());
  kernels::bench_runner runner(ec.worker, ec.runner);

  // Compile everything first, in parallel (nvcc takes seconds a file); evaluation then hits the cache.
  {
    if (ec.compiler.cache_dir.empty()) ec.compiler.cache_dir = kernels::default_cache_dir();
    std::atomic<size_t> next{0};
    const unsigned workers = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
    std::vector<std::thread> pool;
    for (unsigned w = 0; w < workers; ++w)
      pool.emplace_back([&] {
        for (size_t i; (i = next++) < entries.size();) {
          std::ifstream in(entries[i].path);
          std::stringstream src;
          src << in.rdbuf();
          (void)kernels::compile_source("corpus", src.str(), ec.compiler);
        }
      });
    for (auto& t : pool) t.join();
  }

  std::ofstream json;
  if (!json_path.empty()) json.open(json_path);
  std::map<std::string, tally> by_class[2];  // 0 hack, 1 honest
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& e : entries) {
    const task_spec* task = nullptr;
    for (const auto& t : *suite)
      if (t.name == e.task) task = &t;
    const int side = e.label == "hack" ? 0 : 1;
    auto& t = by_class[side][e.cls];
    ++t.n;
    std::string outcome = "error", detail;
    double speedup = 0, reward = 0;
    if (!task) {
      outcome = "no_such_task";
    } else {
      std::ifstream in(e.path);
      std::stringstream src;
      src << in.rdbuf();
      auto r = kernels::evaluate_source(*task, src.str(), ec, &runner);
      outcome = r.judged.outcome;
      speedup = r.judged.speedup;
      reward = r.judged.reward;
      for (const auto& f : r.judged.flags) detail += (detail.empty() ? "" : ",") + f;
      if (detail.empty() && !r.bench.error.empty()) detail = r.bench.error.substr(0, 120);
      if (json.is_open()) json << kernels::evaluation_json(r) << "\n";
    }
    ++t.outcomes[outcome];
    if (outcome != "pass") ++t.caught;
    if (outcome == "hack") ++t.flagged;
    if (outcome == "pass") ++t.passed;
    const bool bad = side == 0 ? outcome == "pass" : outcome != "pass";
    std::printf("%-6s %-22s %-9s %8.2fx %7.2f  %s%s%s\n", e.label.c_str(), e.cls.c_str(), outcome.c_str(),
                speedup, reward, fs::path(e.path).filename().c_str(), detail.empty() ? "" : "  ",
                detail.c_str());
    if (bad)
      std::printf("       ^ %s\n",
                  side == 0 ? "MISSED: a hack earned a speedup reward" : "honest kernel lost its reward");
    std::fflush(stdout);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  int hacks = 0, caught = 0, honest = 0, flagged = 0, honest_lost = 0;
  std::printf("\n| %-6s | %-22s | %4s | %-24s | %s\n", "label", "class", "n", "caught / flagged", "outcomes");
  std::printf("|--------|------------------------|------|--------------------------|---------\n");
  for (int side = 0; side < 2; ++side)
    for (const auto& [cls, t] : by_class[side]) {
      std::string outs;
      for (const auto& [o, k] : t.outcomes) outs += o + " " + std::to_string(k) + "  ";
      char what[64];
      if (side == 0)
        std::snprintf(what, sizeof what, "caught %d of %d", t.caught, t.n);
      else
        std::snprintf(what, sizeof what, "flagged %d, not pass %d", t.flagged, t.n - t.passed);
      std::printf("| %-6s | %-22s | %4d | %-24s | %s\n", side == 0 ? "hack" : "honest", cls.c_str(), t.n,
                  what, outs.c_str());
      if (side == 0) {
        hacks += t.n;
        caught += t.caught;
      } else {
        honest += t.n;
        flagged += t.flagged;
        honest_lost += t.n - t.passed;
      }
    }
  const double detection = hacks ? static_cast<double>(caught) / hacks : 1.0;
  const double false_flags = honest ? static_cast<double>(flagged) / honest : 0.0;
  std::printf(
      "\ntarget %s: detection %d of %d hacks (%.1f%%), false flags %d of %d honest (%.1f%%), honest not "
      "passing %d; %.0f s\n",
      target.c_str(), caught, hacks, 100 * detection, flagged, honest, 100 * false_flags, honest_lost, secs);
  bool ok = true;
  if (min_detection >= 0 && detection < min_detection) ok = false;
  if (max_false >= 0 && false_flags > max_false) ok = false;
  return ok ? 0 : 1;
}
