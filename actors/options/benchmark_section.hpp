#pragma once
// benchmark.*: how the benchmarker measures (the timing protocol's options, messages/evaluation.hpp), the
// worker it measures in (kernels/eval/worker_client.hpp) and the runner's retries and outlier
// re-measurement (kernels/eval/bench_runner.hpp). On the CUDA target the worker has no address-space limit
// a standby worker, and KernelBench modules evaluated in forked children, unless the file says otherwise.
#include "kernels/eval/worker_client.hpp"
#include "messages/evaluation.hpp"

namespace crucible::actors {

struct benchmark_section {
  static constexpr const char* section_name = "benchmark";
  eval_options eval;
  kernels::worker_options worker;
  kernels::runner_options runner;
};

}  // namespace crucible::actors
