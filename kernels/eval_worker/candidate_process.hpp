#pragma once
// The CPU candidate in a process of its own (DESIGN.md §6, "out of reach"), seen from the worker: one
// crucible-candidate-host per evaluation, sealed by seccomp once the artifact is loaded, computing on two
// memfd regions the worker shares with it (inputs read-only there, outputs read-write). The worker keeps the
// reference's outputs, the eager baseline and the clocks; it times each call from outside, as the host's CPU
// time (the host cannot start threads, so that is all the call's work) and the worker's wall time.
#include <sys/types.h>
#include <time.h>

#include <cstddef>
#include <string>
#include <vector>

#include "kernels/abi/crucible_abi.h"

namespace crucible::kernels {

/// An anonymous shared memory file mapped read-write into the worker.
class shared_region {
 public:
  shared_region() = default;
  ~shared_region();
  shared_region(const shared_region&) = delete;
  shared_region& operator=(const shared_region&) = delete;
  /// Empty on success, else why not.
  std::string create(size_t bytes, const char* name);
  char* base() const { return base_; }
  size_t bytes() const { return bytes_; }
  int fd() const { return fd_; }

 private:
  char* base_ = nullptr;
  size_t bytes_ = 0;
  int fd_ = -1;
};

/// One round trip to the host.
struct candidate_call {
  bool ok = false;                ///< crucible_forward returned 0
  bool crashed = false;           ///< the host died during the call (error says of what)
  bool hung = false;              ///< no reply by the deadline; the host was killed
  std::string error;              ///< a non-zero return, an exception, the signal that killed it
  double cpu_ms = 0.0;            ///< the host's CPU time over the round trip, read from outside
  double wall_ms = 0.0;           ///< the worker's wall time over it
  int64_t input_write = -1;       ///< crashed writing to the read-only inputs: the offset in the input region
  bool disguised_output = false;  ///< the output was not what it claimed (a KernelBench host's evidence)
  /// Killed by the sandbox: a refused system call made with SIGSYS blocked (glibc blocks every signal while
  /// it creates a thread or a process), which the kernel answers by ending the process.
  bool sandbox_killed = false;
  int denied = 0;  ///< system calls the sandbox refused during it
  std::string denied_names;
  std::string probes;  ///< process probes it called ("mallopt, sbrk"; process_probes.hpp)
};

/// Not thread-safe: one evaluation's host, driven by the thread that started it.
class candidate_process {
 public:
  candidate_process() = default;
  ~candidate_process();
  candidate_process(const candidate_process&) = delete;
  candidate_process& operator=(const candidate_process&) = delete;

  /// The host executable beside the running worker.
  static std::string default_host_path();

  /// The KernelBench host beside the running worker (crucible-kernelbench-host).
  static std::string kernelbench_host_path();

  /// Starts the host over the two regions and loads `artifact` in it (`extra_args` follow the host's own:
  /// the KernelBench host's problem file). Empty on success, else the load error. After success:
  /// threads_after_load() and children_after_load() say what the artifact's initialisers left running
  /// before the sandbox closed.
  std::string start(const std::string& host_path, const std::string& artifact, const shared_region& inputs,
                    const shared_region& outputs, const std::vector<std::string>& extra_args = {});

  /// Calls crucible_forward on views whose data point into the worker's mappings of the regions.
  candidate_call call(const std::vector<cru_tensor>& inputs, const cru_tensor& output, double deadline_s);
  /// The same round trip without the call.
  candidate_call null_call(double deadline_s);

  /// Runs the host on `cpu` only (the worker's caches are then the host's).
  bool pin(int cpu);
  /// CPU time the host spent between replies and the next command, where it should be blocked in a read:
  /// all of it, the longest single gap, and each gap. Work there is work no call was charged for.
  double outside_cpu_ms() const { return outside_ms_; }
  double max_outside_cpu_ms() const { return max_outside_ms_; }
  const std::vector<double>& outside_gaps_ms() const { return outside_gaps_ms_; }
  int threads_after_load() const { return threads_after_load_; }
  /// start() failed because the sandbox ended the host while the artifact's initialisers ran.
  bool sandbox_killed_at_load() const { return sandbox_killed_at_load_; }
  /// start() failed because a signal ended the host while it loaded (a crash, or the sandbox's kill).
  bool died_at_load() const { return died_at_load_; }
  bool children_after_load() const { return children_after_load_; }
  /// Threads of the host now (/proc), -1 when it cannot be read.
  int threads() const;
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  void stop();

 private:
  candidate_call round_trip(const void* cmd, double deadline_s);
  pid_t pid_ = -1;
  int cmd_fd_ = -1, rep_fd_ = -1;
  clockid_t cpu_clock_{};
  const shared_region* inputs_ = nullptr;
  const shared_region* outputs_ = nullptr;
  int threads_after_load_ = 0;
  bool children_after_load_ = false;
  bool sandbox_killed_at_load_ = false;
  bool died_at_load_ = false;
  double last_reply_cpu_ms_ = -1, outside_ms_ = 0, max_outside_ms_ = 0;
  std::vector<double> outside_gaps_ms_;
};

}  // namespace crucible::kernels
