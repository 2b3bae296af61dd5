#pragma once
// What the eval worker does with one CPU request (DESIGN.md §5 and §6): start the candidate in a sealed
// process of its own (candidate_process.hpp), check it on several seeds while collecting hack evidence, time
// it against the eager reference with paired randomized trials on fresh input values, checking the outputs of
// unannounced timed calls, and check it once more afterwards. The reference, its outputs and the clocks stay
// in this process, out of the candidate's reach.
#include <memory>
#include <string>

#include "kernels/eval_worker/cache_flusher.hpp"
#include "kernels/eval_worker/reference_cache.hpp"
#include "messages/evaluation.hpp"

namespace crucible::kernels {

class candidate_evaluator {
 public:
  /// `host_path`: crucible-candidate-host (default: beside this executable).
  explicit candidate_evaluator(std::string host_path = {});

  /// Never throws; a failure is a bench_result with status load_error, crash, timeout or error.
  /// Not thread-safe: one evaluator per worker process, requests one at a time.
  bench_result evaluate(const eval_request& request);

  /// "host:pid", as reported in bench_result.worker.
  const std::string& worker_id() const { return worker_id_; }

 private:
  reference_cache references_;
  std::unique_ptr<cache_flusher> flusher_;
  std::string host_path_;
  std::string kernelbench_host_path_;  ///< crucible-kernelbench-host, for KernelBench tasks
  std::string worker_id_;
};

}  // namespace crucible::kernels
