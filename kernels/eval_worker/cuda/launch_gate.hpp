// Holds the device closed while the host enqueues a timed call, so the stream events around the call time
// the device's work and not how quickly the host dispatched it (nvbench's blocking kernel): the call's stream
// waits on a host-mapped word (in a one-thread kernel on it), and a hold kernel on the gate's own stream,
// whose blocks fill every SM, spins on the same word until the host opens the gate.
// Filling the SMs, not only holding the stream, matters: work the call puts on another stream cannot start
// while the host is still inside the call, before the first event, where no clock of the worker sees it.
// The hold is not on the call's stream: when the word is written and the hold's blocks leave, the stream's
// one-thread wait kernel (the device's greatest priority) takes a slot first and the call's kernels follow
// it; in checked calls a fill at the next priority takes every slot the call leaves, so work the call left
// unordered with its stream runs after it, where the output read at the stream's end shows it missing.
// close() returns once every block of the hold is resident, so nothing can slip onto the device between the
// flush and the call.
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
#include <functional>
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

  /// Enqueues `flush` (work of the caller's on `stream`: the L2 flush) and then holds `stream` and the
  /// device, and arms the watchdog; returns once the hold occupies every SM (or after a bound, when
  /// something else still does). False (and error() set) when the device refused it. The device must be
  /// idle when it is called.
  /// With `fill_ms` > 0 (and a fill kernel), the SMs the call's stream leaves unused after the gate opens
  /// are taken by a fill at the priority just below it, until call_done()'s mark on the stream or for
  /// `fill_ms` at most: work the call put on other streams of lower priority, unordered with its own, runs
  /// only after its stream is done, where a read ordered on the stream shows it missing.
  bool close(cudaStream_t stream, const std::function<void()>& flush, double fill_ms = 0);

  /// Enqueues on `stream` the mark that ends the fill (a no-op when none runs).
  void call_done(cudaStream_t stream);

  /// Whether the last close() started a fill.
  bool filling() const { return filling_; }

  /// The device's own time from just before the flush to the hold occupying every SM, in the last close();
  /// -1 when unknown (no hold kernel); the host's wait when the hold was not resident within the bound. On an
  /// idle device it is the flush; work of anyone else's that ran meanwhile makes it longer.
  double before_ms() const { return before_ms_; }

  /// Opens the gate. False when the watchdog had already opened it: the call blocked on the device.
  bool open();

 private:
  void watch();
  void release();  ///< lets the stream past the current round
  void release_round(uint32_t round);
  bool wait_resident(uint32_t round);
  bool start_fill(uint32_t round, uint64_t from, double fill_ms);
  void load_hold_kernel();

  std::chrono::milliseconds deadline_;
  std::string error_, scope_note_;
  volatile uint32_t* word_ = nullptr;  ///< host-mapped; the stream waits until it reaches round_
  void* word_device_ = nullptr;
  void* flags_ = nullptr;  ///< host-mapped: the stamp's clock, each block's clock, each block's round
  void* flags_device_ = nullptr;
  volatile uint64_t* stamp_at_ = nullptr;  ///< the device's clock before the flush (%globaltimer, ns)
  volatile uint64_t* since_ = nullptr;     ///< each block of the hold: the device's clock when it began
  volatile uint32_t* seen_ = nullptr;      ///< each block of the hold: its round, once resident
  cudaStream_t hold_stream_ = nullptr;     ///< the hold's own stream, at the device's greatest priority
  cudaEvent_t flushed_ = nullptr;          ///< after the flush on the call's stream; the hold waits for it
  CUfunction stamp_ = nullptr;
  CUfunction pass_ = nullptr;           ///< the call stream's wait for the word (null: a stream memory wait)
  CUfunction fill_ = nullptr;           ///< null: no fill (one priority level only, or it did not load)
  cudaStream_t fill_stream_ = nullptr;  ///< one priority level below the call's stream
  void* done_device_ = nullptr;         ///< device memory: the call's stream writes its round when done
  bool filling_ = false;
  double before_ms_ = -1;
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
