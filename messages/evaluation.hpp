#pragma once
// What the pipeline stages say about a candidate: the compiler's result, the benchmarker's measurements
// and evidence, and the verifier's verdict.
#include <cstdint>
#include <string>
#include <vector>

#include <msgpack.hpp>

#include "messages/task.hpp"

namespace crucible {

struct compile_result {
  std::string candidate_id;
  std::string content_hash;
  bool ok = false;
  bool cached = false;
  std::string artifact;  ///< path of the shared object
  std::string log;       ///< compiler diagnostics, trimmed; what the policy or a person acts on
  double seconds = 0.0;
  MSGPACK_DEFINE_MAP(candidate_id, content_hash, ok, cached, artifact, log, seconds);
};

/// Timings of one evaluation: per-bucket means (milliseconds) of the paired, randomized trials.
struct timing_summary {
  std::vector<double> eager_ms;
  std::vector<double> candidate_ms;
  std::vector<double> bucket_speedups;
  double eager_ms_median = 0.0;
  double candidate_ms_median = 0.0;
  double speedup = 0.0;  ///< median of bucket speedups
  double spread = 0.0;   ///< coefficient of variation of the bucket speedups
  int32_t trials_per_bucket = 0;
  int32_t reruns = 0;  ///< times the variance gate asked for a re-run
  /// CUDA only: the same reference captured once as a CUDA graph and replayed, timed in the same trials.
  std::vector<double> graph_ms;
  double graph_ms_median = 0.0;
  double speedup_vs_graph = 0.0;  ///< median of per-bucket graph_ms / candidate_ms (0: no graph baseline)
  /// KernelBench tasks on CUDA with benchmark.compile_baselines: the reference under torch.compile (default
  /// mode, and mode reduce-overhead), timed in the same trials; 0 where not measured.
  double compile_ms_median = 0.0;
  double speedup_vs_compile = 0.0;
  double compile_ro_ms_median = 0.0;
  double speedup_vs_compile_ro = 0.0;
  MSGPACK_DEFINE_MAP(eager_ms, candidate_ms, bucket_speedups, eager_ms_median, candidate_ms_median, speedup,
                     spread, trials_per_bucket, reruns, graph_ms, graph_ms_median, speedup_vs_graph,
                     compile_ms_median, speedup_vs_compile, compile_ro_ms_median, speedup_vs_compile_ro);
};

/// The benchmarker's report. status: ok | load_error | crash | timeout | error.
/// evidence: machine-readable tags the verifier judges, each dynamic ("input_mutated:w", "output_unwritten",
/// "output_changed_after_return", "threads_left_running", "timed_output_mismatch", "post_timing_mismatch",
/// "input_independent", "result_cache", "below_roofline"; CPU: "sandbox_violation", "process_probe",
/// "work_outside_calls", "load_time_threads", "load_time_processes"; CUDA: "work_outside_stream",
/// "work_before_call", "wall_time_mismatch", "device_state_changed", "reference_library_call"). Static
/// features of the artifact are notes
/// ("static feature FLAG:symbol"), never evidence.
struct bench_result {
  std::string candidate_id;
  std::string task;
  std::string status = "ok";
  bool correct = false;
  bool timed = false;
  double max_abs_err = 0.0;
  double max_rel_err = 0.0;
  double speedup_vs_eager = 0.0;
  double speedup_vs_graph = 0.0;  ///< CUDA: vs the CUDA-graph replay of the reference (0 on the CPU)
  timing_summary timing;
  std::vector<std::string> evidence;
  std::vector<std::string> notes;  ///< human-readable details behind the evidence
  std::string error;
  std::string worker;    ///< which worker measured it (host:pid)
  int32_t attempts = 1;  ///< workers it took (a worker killed under it is retried)
  double wall_s = 0.0;
  /// The worker ends after this reply: its state cannot be trusted (a lost CUDA context, a failure inside
  /// LibTorch, device memory left exhausted). An error it reports this way is retried on a fresh worker.
  bool worker_retired = false;
  /// The task's least possible time (its minimum bytes and products at the device's measured peaks) over the
  /// candidate's median time: 1 is the roofline; 0 when not timed (KernelBench v3's peak fraction).
  double peak_fraction = 0.0;
  /// Set by the worker client, not the worker: the worker process died under this evaluation (killed from
  /// outside, or by what it ran), or before it was ready to serve it, so a fresh worker may answer
  /// differently.
  bool worker_died = false;
  MSGPACK_DEFINE_MAP(candidate_id, task, status, correct, timed, max_abs_err, max_rel_err, speedup_vs_eager,
                     timing, evidence, notes, error, worker, attempts, wall_s, speedup_vs_graph,
                     worker_retired, peak_fraction, worker_died);
};

/// How the benchmarker measures (DESIGN.md §5); defaults come from config (benchmark.*).
struct eval_options {
  int32_t seeds = 3;         ///< correctness seeds; one of them draws heavy-tailed inputs
  int32_t input_sets = 4;    ///< rotating pool of timing inputs (different values and addresses)
  int32_t warmup = 2;        ///< untimed paired calls before the buckets (at least)
  int32_t buckets = 7;       ///< CUDA-L1 uses 7
  int32_t trials = 3;        ///< paired trials per bucket
  bool flush_cache = true;   ///< evict caches before every timed call
  int32_t threads = 1;       ///< intra-op threads for the reference; candidates run on the calling thread
  double settle_ms = 5.0;    ///< wait after a call before re-checking its outputs (deferred work shows)
  double max_spread = 0.10;  ///< variance gate on bucket speedups; above it the buckets are re-run once
  int32_t max_reruns = 1;
  bool timing = true;  ///< false: correctness checks only
  double early_stop_slowdown =
      20.0;                ///< a candidate this many times slower after the first bucket stops there
  double warmup_ms = 0.0;  ///< and warm-up rounds go on until this long has passed
  /// CUDA: true times the host's launch latency too (the host waits for the L2 flush before the call, as
  /// KernelBench's harness does); false holds the stream while the host enqueues the call, so the events
  /// time the device's work, and charges the host's time in the call when that is longer.
  bool time_launch = false;
  /// The share of timed calls whose output is checked afterwards, unannounced (every one when the artifact
  /// has static features that raise scrutiny): a check costs a run of the reference.
  double checked_share = 0.5;
  /// KernelBench tasks on CUDA: also time the reference under torch.compile (default and reduce-overhead)
  /// in every trial. Each evaluation then compiles the reference first (seconds to a minute with Inductor).
  bool compile_baselines = false;
  /// CUDA: a timed baseline call is also charged its device tail and longer flush below the evidence
  /// thresholds, as the candidate's calls always are, but never more than the candidate's own mean and
  /// median charge so far (work a candidate leaves for the baseline's calls then buys nothing). Off, the
  /// candidate alone pays them: A/A speedups sat 0.0016 below 1 on an H100, 0.0007 with it (RESULTS.md).
  bool charge_reference_tails = true;
  /// With charge_reference_tails: the cap applied per bucket, not per call. A baseline call offers its whole
  /// tail; each bucket's baseline mean is charged the mean offered, but never more than the candidate's mean
  /// charge in the same bucket. A bucket's speedup (a ratio of bucket means) then never rises above the one
  /// without charges, and two alike sides are charged alike: a cap per call lowers the reference's mean
  /// charge below the candidate's (E[min(x, cap)] < E[x]), 40% of level 2's A/A bias on an H100.
  bool bucket_charge_cap = false;
  /// CUDA: an untimed empty region (device-wide wait, flush, gate; no work) right before each of the
  /// candidate's timed calls. The candidate must run first after a trial's fresh draw; with this it follows a
  /// region, as every baseline does, rather than the draw and the checks between trials.
  bool lead_region = false;
  MSGPACK_DEFINE_MAP(seeds, input_sets, warmup, buckets, trials, flush_cache, threads, settle_ms, max_spread,
                     max_reruns, timing, early_stop_slowdown, warmup_ms, time_launch, checked_share,
                     compile_baselines, charge_reference_tails, bucket_charge_cap, lead_region);
};

/// What the benchmarker asks of its isolated worker process.
struct eval_request {
  std::string candidate_id;
  task_spec task;
  std::string artifact;  ///< shared object exporting crucible_forward
  eval_options options;
  std::string target = "cpu";  ///< cpu | cuda: which side of the worker measures it
  MSGPACK_DEFINE_MAP(candidate_id, task, artifact, options, target);
};

/// What the optional judge stage (actors/judge.cpp, kernels/verify/outlier_review.hpp) found when it reviewed
/// an outlier. An empty finding: the candidate was not reviewed (not an outlier, or no judge in the
/// pipeline).
struct judge_review {
  std::string finding;               ///< upheld | hack | inconclusive; empty: not reviewed
  std::string reasoning;             ///< what the reviewer checked and why it concluded so
  std::vector<std::string> reasons;  ///< why it was reviewed: speedup | near_roofline | static_features
  std::string similar_case;          ///< the most similar confirmed hack (its content hash), if any
  double similarity = 0.0;           ///< of that case, in [0, 1]
  std::string reviewer;              ///< which reviewer answered (rules, ...)
  MSGPACK_DEFINE_MAP(finding, reasoning, reasons, similar_case, similarity, reviewer);
};

/// outcome: pass | incorrect | compile_error | crash | timeout | hack | error | abandoned (the run stopped
/// before the candidate's pipeline finished).
struct verdict {
  std::string candidate_id;
  std::string content_hash;
  std::string outcome = "error";
  std::vector<std::string> flags;     ///< hack flags; non-empty means outcome == hack
  std::vector<std::string> evidence;  ///< what each flag rests on
  double speedup = 0.0;               ///< the believed speedup vs eager (0 unless pass)
  double reward = 0.0;
  judge_review review;  ///< the judge stage's finding, stored with the verdict (absent in older messages)
  MSGPACK_DEFINE_MAP(candidate_id, content_hash, outcome, flags, evidence, speedup, reward, review);
};

}  // namespace crucible
