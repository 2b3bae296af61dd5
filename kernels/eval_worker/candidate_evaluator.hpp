#pragma once
// What the eval worker does with one request (DESIGN.md §5 and §6): load the candidate, check it on several
// seeds while collecting hack evidence, time it against the eager reference with paired randomized trials,
// and check it once more afterwards. Runs the candidate on the calling thread, inside this process: a signal
// kills the worker, which is what the worker client is for.
#include <map>
#include <memory>
#include <string>

#include "kernels/eval_worker/cache_flusher.hpp"
#include "kernels/eval_worker/reference_cache.hpp"
#include "kernels/reference/reference_executor.hpp"
#include "messages/evaluation.hpp"

namespace crucible::kernels {

class candidate_evaluator {
 public:
  candidate_evaluator();

  /// Never throws; a failure is a bench_result with status load_error or error.
  /// Not thread-safe: one evaluator per worker process, requests one at a time.
  bench_result evaluate(const eval_request& request);

  /// "host:pid", as reported in bench_result.worker.
  const std::string& worker_id() const { return worker_id_; }

 private:
  reference_cache references_;
  std::map<std::string, int> loads_;  // artifact path -> times loaded (a reload is loaded from a copy)
  std::unique_ptr<cache_flusher> flusher_;
  std::string worker_id_;
};

}  // namespace crucible::kernels
