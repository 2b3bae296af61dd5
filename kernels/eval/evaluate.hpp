#pragma once
// One-shot evaluation of a source file on a task, as `crucible eval` runs it: compile, benchmark in an
// isolated worker, judge. The same stages and rules the pipeline's actors apply, in one call, so a kernel
// author sees exactly the verdict the training run would give.
#include <string>

#include "kernels/eval/compiler.hpp"
#include "kernels/eval/worker_client.hpp"
#include "kernels/verify/judge.hpp"
#include "messages/candidate.hpp"
#include "messages/evaluation.hpp"
#include "messages/task.hpp"

namespace crucible::kernels {

struct evaluation_config {
  compiler_options compiler;  ///< cache_dir empty: $XDG_CACHE_HOME/crucible/artifacts (or ~/.cache/...)
  worker_options worker;
  runner_options runner;
  eval_options eval;
  judge_options judge;
};

/// Everything one evaluation produced.
struct evaluation {
  std::string target;
  candidate cand;
  compile_result compiled;
  bench_result bench;  ///< status "error", error "not run: ..." when compilation failed
  verdict judged;
};

/// Compiles `source`, measures it on `task` and judges it. Pass a `runner` to reuse its worker across calls
/// (the worker keeps LibTorch loaded and its references built); without one a worker is started and
/// stopped for this call. Never throws. Not thread-safe for a shared runner.
evaluation evaluate_source(const task_spec& task, const std::string& source, const evaluation_config& config,
                           bench_runner* runner = nullptr);

/// The evaluation as one JSON object: task, target, compiled, correct, speedup_vs_eager, speedup_vs_graph
/// (CUDA), speedup_vs_compile and _reduce_overhead (KernelBench on CUDA, when measured), times {eager_ms,
/// candidate_ms (medians), buckets, spread, reruns}, verdict {outcome, flags, evidence, reward}, error,
/// compile_log (plus candidate id, content hash, evidence, notes, worker, attempts and wall times).
std::string evaluation_json(const evaluation& e);

/// The evaluation as `crucible eval` prints it, a line per fact: task, compiled (or staged), correct, the
/// times against each baseline measured, the verdict with its flags and evidence, and the error.
std::string evaluation_text(const evaluation& e, const std::string& task_name);

/// Where artifacts are cached when the config names no directory.
std::string default_cache_dir();

}  // namespace crucible::kernels
