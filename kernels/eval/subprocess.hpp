#pragma once
// Child processes of the evaluation engine (the compiler, the eval worker): fork/exec without a shell, each
// in its own process group (so a deadline kills everything it started), with resource limits applied in the
// child before exec. Kept apart from the compiler and the worker client because both need the same care:
// only async-signal-safe calls between fork and exec, every descriptor closed except the ones handed over.
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "messages/expected.hpp"

namespace crucible::kernels {

/// Limits applied to the child (0 = leave as inherited).
struct process_limits {
  double cpu_s = 0;              ///< RLIMIT_CPU, per process of the tree (rounded up to whole seconds)
  int64_t memory_mb = 0;         ///< RLIMIT_AS, per process
  int64_t file_mb = 0;           ///< RLIMIT_FSIZE: the largest file the child may write
  int64_t max_processes = 0;     ///< RLIMIT_NPROC headroom above what the user runs now (see spawn_process)
  bool isolate_network = false;  ///< unshare(CLONE_NEWNET); ignored where not permitted
  bool die_with_parent = true;   ///< PR_SET_PDEATHSIG(SIGKILL); fires when the spawning *thread* exits
  bool no_core_dumps = true;
};

struct spawn_spec {
  std::vector<std::string> argv;  ///< argv[0] is resolved against PATH before fork
  /// (child fd, parent fd) pairs installed with dup2; every other descriptor is closed in the child.
  /// A parent fd of -1 installs /dev/null.
  std::vector<std::pair<int, int>> fds;
  process_limits limits;
  std::string working_dir;  ///< empty: inherit
};

/// Starts the child as the leader of a new process group (pgid == pid). Never throws; the error says why the
/// child could not be started (exec failures are reported back through a close-on-exec pipe).
/// RLIMIT_NPROC counts every process of the real user, and root ignores it: as root it is not set; otherwise
/// it is set to the user's current task count plus max_processes, so the limit bounds what the child adds.
/// Thread-safe (fork from any thread; all descriptors the engine opens are close-on-exec).
expected<pid_t> spawn_process(const spawn_spec& spec);

/// How a child ended.
struct exit_info {
  bool exited = false;
  int code = -1;   ///< exit status when exited
  int signal = 0;  ///< terminating signal otherwise
  /// "exit code 1", "signal 11 (SIGSEGV)".
  std::string describe() const;
};

exit_info decode_wait_status(int wait_status);

/// SIGKILLs the process group `pgid` (the child and whatever it started) and reaps `pid`.
exit_info kill_and_reap(pid_t pid);

/// Reaps `pid` if it has ended within `grace_s`; kills its group and reaps otherwise. Always kills stragglers
/// of the group afterwards.
exit_info reap_with_grace(pid_t pid, double grace_s);

/// The outcome of run_process.
struct run_result {
  exit_info exit;
  bool timed_out = false;
  std::string output;       ///< stdout and stderr interleaved, at most max_output bytes
  size_t output_bytes = 0;  ///< how much the child wrote in all
  double seconds = 0.0;
};

/// Runs argv to completion with stdout+stderr captured and a wall-clock deadline (the group is killed when it
/// passes). Errors only when the child could not be started.
expected<run_result> run_process(const std::vector<std::string>& argv, const process_limits& limits,
                                 double timeout_s, size_t max_output, const std::string& working_dir = {});

/// The absolute path of `name` on PATH (or `name` itself when it contains a '/'), empty when not found.
std::string find_executable(const std::string& name);

}  // namespace crucible::kernels
