#pragma once
// The CUDA side of the eval worker (DESIGN.md §5 and §6), built with -DCRUCIBLE_CUDA=ON. One evaluator per
// worker process and device. For each request it loads the candidate and runs the evaluation protocol
// (evaluation_protocol.hpp) over the CUDA device backend: inputs drawn on the device, outputs poisoned, the
// L2 flushed before every call, the launch gate, the candidate first on each trial's fresh values and then
// the eager reference and its CUDA-graph replay in random order, stream events cross-checked with host wall
// time after a device-wide synchronize, device state re-checked after every call.
// A sticky CUDA error or a kernel that never finishes is a verdict (crash, timeout), after which the
// context cannot be trusted: must_exit() turns true and the worker leaves after answering.
#include <memory>
#include <string>

#include "messages/evaluation.hpp"

namespace crucible::kernels {

class cuda_evaluator {
 public:
  /// Binds `device`, creates the stream, the cuBLAS handle and the L2 flush buffer. Check ok() after.
  explicit cuda_evaluator(int device);
  ~cuda_evaluator();
  cuda_evaluator(const cuda_evaluator&) = delete;
  cuda_evaluator& operator=(const cuda_evaluator&) = delete;

  /// Empty when the device is usable, else why not (no device, driver too old, ...).
  const std::string& init_error() const;
  /// Where binding the device went, in ms per step: "context 150, properties, stream 1, cublas 20, ...".
  const std::string& bind_parts() const;
  /// Never throws; a failure is a bench_result with status load_error, error, crash or timeout.
  bench_result evaluate(const eval_request& request, const std::string& worker_id);
  /// True after a sticky CUDA error or a kernel that did not finish: answer, then exit the process.
  bool must_exit() const;
  /// This process ends after its request (a child forked for it): a KernelBench module needs no worker
  /// retired after it to get a fresh interpreter.
  void set_single_use();
  /// "NVIDIA H200, 132 SMs, L2 60 MiB, 4.9 TB/s" for the worker's log and notes.
  std::string describe() const;

  struct impl;  ///< defined in the .cpp (the per-request session reaches into it)

 private:
  std::unique_ptr<impl> impl_;
};

/// Whether this process has initialized the CUDA driver (cuInit): a process that has cannot fork a child
/// that uses the device.
bool cuda_driver_initialized();

}  // namespace crucible::kernels
