// Holds the device closed while the host enqueues a timed call, so the stream events around the call time
// the device's work and not how quickly the host dispatched it (nvbench's blocking kernel): a kernel on the
// call's stream whose blocks fill every SM spins on a host-mapped word until the host opens the gate.
// Filling the SMs, not only holding the stream, matters: work the call puts on another stream cannot start
// while the host is still inside the call, before the first event, where no clock of the worker sees it.
// The host's own time in the call is measured apart.
// A call that waits on the device inside its launch (a synchronize, or more launches than a stream
// queues: about a thousand) would wait on the closed gate forever: a watchdog opens it after the
// deadline, and open() reports that it had to.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace crucible::kernels {

class launch_gate {
 public:
  /// For the current device, whose context must be current on this thread.
  explicit launch_gate(std::chrono::milliseconds deadline);
  ~launch_gate();
  launch_gate(const launch_gate&) = delete;
  launch_gate& operator=(const launch_gate&) = delete;

  /// Empty while the gate works; why it does not otherwise (then callers time launches with the call).
  const std::string& error() const { return error_; }

  /// Empty when the gate fills every SM; otherwise why it holds only the stream (a stream memory wait).
  const std::string& scope_note() const { return scope_note_; }

  /// Enqueues the hold on `stream` and arms the watchdog. False (and error() set) when the device
  /// refused it.
  bool close(cudaStream_t stream);

  /// Opens the gate. False when the watchdog had already opened it: the call blocked on the device.
  bool open();

 private:
  void watch();
  void release();  ///< lets the stream past the current round
  void load_hold_kernel();

  std::chrono::milliseconds deadline_;
  std::string error_, scope_note_;
  volatile uint32_t* word_ = nullptr;  ///< host-mapped; the stream waits until it reaches round_
  void* word_device_ = nullptr;
  CUmodule module_ = nullptr;
  CUfunction hold_ = nullptr;  ///< null: the gate is a stream memory wait
  unsigned blocks_ = 0, threads_ = 0;
  uint32_t round_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  bool armed_ = false, fired_ = false, stop_ = false;
  std::chrono::steady_clock::time_point due_;
  std::thread watchdog_;
};

}  // namespace crucible::kernels
