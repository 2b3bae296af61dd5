#include "kernels/eval/evaluate.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include <nlohmann/json.hpp>

#include "kernels/verify/verdict_vocabulary.hpp"
#include "messages/content_hash.hpp"

namespace crucible::kernels {

std::string default_cache_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/crucible/artifacts";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/crucible/artifacts";
  return "/tmp/crucible-artifacts-" + std::to_string(getuid());
}

evaluation evaluate_source(const task_spec& task, const std::string& source, const evaluation_config& config,
                           bench_runner* runner) {
  evaluation e;
  e.target = config.compiler.target;
  e.cand.id = "eval-" + short_hash(source);
  e.cand.task = task.name;
  e.cand.target = config.compiler.target;
  const bool module = !task.module.empty();  // a KernelBench task: the candidate is Python
  e.cand.language = module ? "py" : config.compiler.target == "cuda" ? "cu" : "cpp";
  e.cand.content_hash = sha256_hex(source);
  e.cand.source = source;
  e.cand.created_unix =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();

  compiler_options copts = config.compiler;
  if (copts.cache_dir.empty()) copts.cache_dir = default_cache_dir();
  e.compiled = module ? stage_module(e.cand.id, source, copts) : compile_source(e.cand.id, source, copts);

  e.bench.candidate_id = e.cand.id;
  e.bench.task = task.name;
  if (!e.compiled.ok) {
    e.bench.status = "error";
    e.bench.error = "not run: compilation failed";
  } else {
    eval_request req;
    req.candidate_id = e.cand.id;
    req.task = task;
    req.artifact = e.compiled.artifact;
    req.options = config.eval;
    req.target = config.compiler.target;
    if (runner) {
      e.bench = runner->run(req);
    } else {
      bench_runner local(config.worker, config.runner);
      e.bench = local.run(req);
    }
  }
  e.judged = judge(e.cand, e.compiled, e.bench, config.judge);
  return e;
}

namespace {

std::string printed(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string printed(const char* format, ...) {
  char buf[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return buf;
}

}  // namespace

std::string evaluation_text(const evaluation& e, const std::string& task_name) {
  std::string out;
  auto line = [&out](const char* key, const std::string& value) {
    out += printed("%-11s", key) + value + "\n";
  };
  const auto& v = e.judged;
  line("task", task_name + " (" + e.target + ")");
  if (e.cand.language == "py")
    line("staged", std::string(e.compiled.ok ? "yes" : "no") + " (a Python module: no compiler)");
  else
    line("compiled", std::string(e.compiled.ok ? "yes" : "no") + (e.compiled.cached ? " (cached)" : ""));
  if (!e.compiled.ok) out += e.compiled.log + "\n";
  line("correct", printed("%s (max abs err %.3g, max rel err %.3g)", e.bench.correct ? "yes" : "no",
                          e.bench.max_abs_err, e.bench.max_rel_err));
  const auto& t = e.bench.timing;
  if (e.bench.timed) {
    line("time", printed("eager %.4f ms, candidate %.4f ms (median of %zu buckets, spread %.1f%%)",
                         t.eager_ms_median, t.candidate_ms_median, t.bucket_speedups.size(), 100 * t.spread));
    if (t.graph_ms_median > 0)
      line("graph",
           printed("CUDA-graph reference %.4f ms: %.2fx vs graph", t.graph_ms_median, t.speedup_vs_graph));
    if (t.compile_ms_median > 0)
      line("compile", printed("torch.compile reference %.4f ms: %.2fx vs torch.compile", t.compile_ms_median,
                              t.speedup_vs_compile));
    if (t.compile_ro_ms_median > 0)
      line("compile", printed("torch.compile reduce-overhead %.4f ms: %.2fx vs it", t.compile_ro_ms_median,
                              t.speedup_vs_compile_ro));
    if (e.bench.peak_fraction > 0)
      line("roofline",
           printed("%.1f%% of the least time the task's bytes take", 100 * e.bench.peak_fraction));
  }
  std::string verdict = v.outcome;
  if (has_outcome(v, outcome::pass)) verdict += printed(", %.2fx vs eager", v.speedup);
  if (has_outcome(v, outcome::pass) && t.speedup_vs_graph > 0)
    verdict += printed(", %.2fx vs CUDA graph", t.speedup_vs_graph);
  line("verdict", verdict + printed(" (reward %.3f)", v.reward));
  for (const auto& f : v.flags) line("flag", f);
  for (const auto& ev : v.evidence) line("evidence", ev);
  if (!e.bench.error.empty()) line("error", e.bench.error);
  return out;
}

std::string evaluation_json(const evaluation& e) {
  using nlohmann::json;
  const auto& t = e.bench.timing;
  json times = {
      {"eager_ms", t.eager_ms_median},
      {"candidate_ms", t.candidate_ms_median},
      {"graph_ms", t.graph_ms_median},
      {"compile_ms", t.compile_ms_median},
      {"compile_reduce_overhead_ms", t.compile_ro_ms_median},
      {"buckets",
       {{"eager_ms", t.eager_ms},
        {"candidate_ms", t.candidate_ms},
        {"graph_ms", t.graph_ms},
        {"speedups", t.bucket_speedups}}},
      {"trials_per_bucket", t.trials_per_bucket},
      {"spread", t.spread},
      {"reruns", t.reruns},
  };
  json verdict_json = {
      {"outcome", e.judged.outcome}, {"flags", e.judged.flags},   {"evidence", e.judged.evidence},
      {"speedup", e.judged.speedup}, {"reward", e.judged.reward},
  };
  std::string error = !e.compiled.ok ? std::string("compilation failed") : e.bench.error;
  json j = {
      {"task", e.bench.task.empty() ? e.cand.task : e.bench.task},
      {"target", e.target},
      {"candidate_id", e.cand.id},
      {"content_hash", e.cand.content_hash},
      {"compiled", e.compiled.ok},
      {"compile_cached", e.compiled.cached},
      {"compile_seconds", e.compiled.seconds},
      {"status", e.bench.status},
      {"correct", e.bench.correct},
      {"timed", e.bench.timed},
      {"max_abs_err", e.bench.max_abs_err},
      {"max_rel_err", e.bench.max_rel_err},
      {"speedup_vs_eager", e.bench.speedup_vs_eager},
      {"speedup_vs_graph", e.bench.speedup_vs_graph},
      {"speedup_vs_compile", t.speedup_vs_compile},
      {"speedup_vs_compile_reduce_overhead", t.speedup_vs_compile_ro},
      {"peak_fraction", e.bench.peak_fraction},
      {"times", times},
      {"verdict", verdict_json},
      {"evidence", e.bench.evidence},
      {"notes", e.bench.notes},
      {"worker", e.bench.worker},
      {"attempts", e.bench.attempts},
      {"bench_seconds", e.bench.wall_s},
      {"error", error},
      {"compile_log", e.compiled.log},
  };
  // Diagnostics and candidate output are arbitrary bytes: never let a stray byte make the JSON unprintable.
  return j.dump(2, ' ', false, json::error_handler_t::replace);
}

}  // namespace crucible::kernels
