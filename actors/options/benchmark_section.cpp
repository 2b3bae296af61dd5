#include "actors/options/benchmark_section.hpp"

#include "runtime/config/config.hpp"

namespace crucible::actors {
namespace {

runtime::field_list fields(benchmark_section& s) {
  return {
      {"seeds", &s.eval.seeds},
      {"input_sets", &s.eval.input_sets},
      {"warmup", &s.eval.warmup},
      {"warmup_ms", &s.eval.warmup_ms},
      {"buckets", &s.eval.buckets},
      {"trials", &s.eval.trials},
      {"flush_cache", &s.eval.flush_cache},
      {"time_launch", &s.eval.time_launch},
      {"threads", &s.eval.threads},
      {"settle_ms", &s.eval.settle_ms},
      {"max_spread", &s.eval.max_spread},
      {"max_reruns", &s.eval.max_reruns},
      {"early_stop_slowdown", &s.eval.early_stop_slowdown},
      {"checked_share", &s.eval.checked_share},
      {"compile_baselines", &s.eval.compile_baselines},
      {"charge_reference_tails", &s.eval.charge_reference_tails},
      {"bucket_charge_cap", &s.eval.bucket_charge_cap},
      {"lead_region", &s.eval.lead_region},
      {"timeout_s", &s.worker.timeout_s},
      {"memory_mb", &s.worker.memory_mb},
      {"standby_worker", &s.worker.standby},
      {"fork_modules", &s.worker.fork_modules},
      {"max_attempts", &s.runner.max_attempts},
      {"outlier_speedup", &s.runner.outlier_speedup},
      {"outlier_vs_best", &s.runner.outlier_vs_best},
  };
}

status validate(const benchmark_section& s, const runtime::config& c) {
  const auto& e = s.eval;
  if (e.seeds < 2) return make_error("benchmark.seeds: expected >= 2 (one nominal, one heavy-tailed)");
  if (e.input_sets < 2) return make_error("benchmark.input_sets: expected >= 2");
  if (e.warmup < 0 || e.warmup_ms < 0)
    return make_error("benchmark.warmup and benchmark.warmup_ms: expected >= 0");
  if (e.buckets < 1 || e.trials < 1)
    return make_error("benchmark.buckets and benchmark.trials: expected >= 1");
  if (!(e.checked_share > 0 && e.checked_share <= 1))
    return make_error("benchmark.checked_share: expected a share in (0, 1]");
  if (e.threads < 1) return make_error("benchmark.threads: expected >= 1");
  if (!(s.worker.timeout_s > 0)) return make_error("benchmark.timeout_s: expected > 0");
  if (s.runner.max_attempts < 1) return make_error("benchmark.max_attempts: expected >= 1");
  // The conductor's patience must outlast one measurement, or every slow candidate would count as lost.
  if (!(c.dispatch.stage_timeout_s > s.worker.timeout_s))
    return make_error("dispatch.stage_timeout_s: expected more than benchmark.timeout_s");
  return {};
}

void resolve(benchmark_section& s, const runtime::config& c, const runtime::key_is_set& set) {
  if (c.target != "cuda") return;
  // CUDA reserves far more address space than it uses: no RLIMIT_AS on a CUDA worker.
  if (!set("benchmark.memory_mb")) s.worker.memory_mb = 0;
  // A re-measurement in a fresh worker (an outlier, a retry) finds one already loaded. On the CPU target a
  // worker loading beside a measurement would compete with it for the cores it times.
  if (!set("benchmark.standby_worker")) s.worker.standby = true;
  // Each KernelBench candidate in a child forked from a worker that imported torch once, not in a fresh
  // worker (8 of 9 s an evaluation on an H100). On the CPU target the worker keeps its reference cache
  // across candidates instead: a child's would end with it.
  if (!set("benchmark.fork_modules")) s.worker.fork_modules = true;
}

status bind_run(benchmark_section& s, const std::string& run_dir) {
  s.worker.log_path = run_dir + "/eval_worker.log";
  return {};
}

const bool registered = runtime::register_section<benchmark_section>({fields, validate, resolve, bind_run});

}  // namespace
}  // namespace crucible::actors
