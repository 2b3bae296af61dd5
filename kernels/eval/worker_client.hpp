#pragma once
// The benchmarker's side of the isolated eval worker process (kernels/eval_worker). Requests and results
// travel as msgpack envelopes over a pair of pipes (not stdout, which candidates may write to). The worker
// is started lazily; if it crashes, hangs past the deadline or is killed, the call returns a bench_result
// saying so (status crash or timeout) and the next call starts a fresh worker.
// With `standby`, a second worker is kept started (LibTorch loaded, the device bound; after a KernelBench
// request, Python started and torch imported) for the next fresh start, so a re-measurement in a fresh
// worker, or the next KernelBench candidate (each gets a fresh interpreter), does not wait for one to load.
// The worker runs in its own process group (a kill takes the candidates' children too), under RLIMIT_AS,
// without network where the OS allows, and gets SIGKILL when the thread that started it exits
// (PR_SET_PDEATHSIG): start and use a client from a long-lived thread.
#include <string>

#include "messages/evaluation.hpp"

namespace crucible::kernels {

struct worker_options {
  /// The crucible-eval-worker executable; empty: $CRUCIBLE_EVAL_WORKER, else next to this executable or
  /// up to two folders above it, else on PATH.
  std::string worker_path;
  double timeout_s = 30.0;          ///< per evaluation, from the request being sent to the result
  double startup_timeout_s = 60.0;  ///< a fresh worker must be ready (LibTorch loaded) within this
  int64_t memory_mb = 8192;         ///< address-space limit of the worker (0: none; CUDA needs none)
  int device = -1;                  ///< CUDA device the worker measures on (-1: a CPU worker)
  std::string log_path;  ///< the worker's stdout/stderr (candidate output lands here); empty: /dev/null
  /// Keep a standby worker for the next fresh start: it loads, and binds its device, while the current one
  /// measures (measured not to disturb the measurement on an H200: bench/RESULTS.md).
  bool standby = false;
  /// A worker that serves KernelBench modules evaluates each in a child it forks for it (Python and torch
  /// imported once, the device bound in the child) instead of being retired after each: the next candidate
  /// needs no fresh worker. Off: a fresh worker (the standby) per candidate on the CUDA target.
  bool fork_modules = false;
};

class worker_client {
 public:
  explicit worker_client(worker_options options);
  ~worker_client();
  worker_client(const worker_client&) = delete;
  worker_client& operator=(const worker_client&) = delete;

  /// Evaluates one candidate. Never throws. One call at a time (not thread-safe). A worker in which the
  /// candidate left threads, deferred writes or work on other streams behind, or that reported a crash
  /// itself (a CUDA context lost to a sticky error), is retired after answering.
  bench_result evaluate(const eval_request& request);

  /// Kills the worker (if any); the next evaluate starts a fresh one.
  void restart();
  /// The worker's pid, 0 when none is running. Safe to call from any thread.
  int pid() const;
  /// Workers started so far (a standby counts once it takes over).
  int starts() const;
  /// Seconds evaluate() spent waiting for workers to be ready, summed over every start.
  double start_wait_s() const;
  /// The standby worker's pid, 0 when none is waiting.
  int standby_pid() const;

 private:
  struct impl;
  impl* impl_;
};

/// Retry and re-measurement policy around a worker (DESIGN.md §5): a worker that dies under a candidate is
/// replaced and the candidate tried once more (so a killed worker costs nothing; a candidate that crashes
/// twice gets a crash verdict); a speedup above the outlier threshold is re-measured in a fresh worker and
/// the lower figure is believed.
struct runner_options {
  int max_attempts = 2;
  double outlier_speedup = 3.0;  ///< re-measure above this ...
  double outlier_vs_best = 2.0;  ///< ... or above this multiple of the best seen for the task
};

class bench_runner {
 public:
  bench_runner(worker_options worker, runner_options runner);
  bench_result run(const eval_request& request, double best_seen_for_task = 0.0);
  worker_client& worker() { return worker_; }

 private:
  worker_client worker_;
  runner_options options_;
};

}  // namespace crucible::kernels
