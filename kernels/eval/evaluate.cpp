#include "kernels/eval/evaluate.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>

#include <nlohmann/json.hpp>

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
