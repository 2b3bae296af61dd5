#include "kernels/eval/subprocess.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

extern char** environ;

namespace crucible::kernels {

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// Threads (what RLIMIT_NPROC counts) of real user `uid`, from /proc/<pid>/status.
int64_t user_task_count(uid_t uid) {
  int64_t total = 0;
  DIR* proc = opendir("/proc");
  if (!proc) return 0;
  while (auto* e = readdir(proc)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::ifstream status(std::string("/proc/") + e->d_name + "/status");
    std::string line;
    bool mine = false;
    while (std::getline(status, line)) {
      if (line.rfind("Uid:", 0) == 0) mine = std::strtoul(line.c_str() + 4, nullptr, 10) == uid;
      if (line.rfind("Threads:", 0) == 0) {
        if (mine) total += std::strtoll(line.c_str() + 8, nullptr, 10);
        break;
      }
    }
  }
  closedir(proc);
  return total;
}

// Async-signal-safe: closes every descriptor >= `from`.
void close_from(int from) {
#ifdef SYS_close_range
  if (syscall(SYS_close_range, static_cast<unsigned>(from), ~0U, 0) == 0) return;
#endif
  long max_fd = sysconf(_SC_OPEN_MAX);
  if (max_fd < 0 || max_fd > 65536) max_fd = 65536;
  for (int fd = from; fd < max_fd; ++fd) close(fd);
}

[[noreturn]] void child_fail(int err_fd, int err) {
  ssize_t ignored = write(err_fd, &err, sizeof err);
  (void)ignored;
  _exit(127);
}

// Waits (without reaping) until `pid` has ended or `deadline` passes; true if it ended.
bool wait_ended(pid_t pid, clock_type::time_point deadline) {
  for (;;) {
    siginfo_t info{};
    int rc = waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT);
    if (rc == 0 && info.si_pid == pid) return true;
    if (rc != 0 && errno != EINTR) return true;  // not our child any more: nothing to wait for
    if (clock_type::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

exit_info reap(pid_t pid) {
  int st = 0;
  for (;;) {
    pid_t r = waitpid(pid, &st, 0);
    if (r == pid) return decode_wait_status(st);
    if (r < 0 && errno != EINTR) return {};
  }
}

}  // namespace

std::string exit_info::describe() const {
  if (exited) return "exit code " + std::to_string(code);
  if (signal > 0) {
    const char* abbrev = sigabbrev_np(signal);
    return "signal " + std::to_string(signal) + " (" + (abbrev ? std::string("SIG") + abbrev : "?") + ")";
  }
  return "unknown exit";
}

exit_info decode_wait_status(int st) {
  exit_info info;
  if (WIFEXITED(st)) {
    info.exited = true;
    info.code = WEXITSTATUS(st);
  } else if (WIFSIGNALED(st)) {
    info.signal = WTERMSIG(st);
  }
  return info;
}

exit_info kill_and_reap(pid_t pid) {
  if (pid <= 0) return {};
  kill(-pid, SIGKILL);  // the group is safe to address until the leader is reaped
  kill(pid, SIGKILL);
  return reap(pid);
}

exit_info reap_with_grace(pid_t pid, double grace_s) {
  if (pid <= 0) return {};
  auto deadline = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(
                                          std::chrono::duration<double>(std::max(0.0, grace_s)));
  wait_ended(pid, deadline);
  // Ended or not, nothing the child started may outlive it; the zombie leader keeps the pgid reserved.
  return kill_and_reap(pid);
}

std::string find_executable(const std::string& name) {
  if (name.empty()) return {};
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : std::string();
  const char* path = std::getenv("PATH");
  std::string dirs = path && *path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return {};
}

expected<pid_t> spawn_process(const spawn_spec& spec) {
  if (spec.argv.empty()) return make_error("spawn_process: empty argv");
  std::string exe = find_executable(spec.argv[0]);
  if (exe.empty()) return make_error("'" + spec.argv[0] + "' not found (or not executable) on PATH");

  // Everything the child touches is prepared here: between fork and exec only async-signal-safe calls.
  std::vector<char*> argv;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  std::vector<std::pair<int, int>> fds = spec.fds;
  for (int std_fd = 0; std_fd <= 2; ++std_fd)
    if (std::none_of(fds.begin(), fds.end(), [&](auto& p) { return p.first == std_fd; }))
      fds.emplace_back(std_fd, -1);
  int dev_null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (dev_null < 0) return make_error(std::string("cannot open /dev/null: ") + std::strerror(errno));
  for (auto& p : fds)
    if (p.second < 0) p.second = dev_null;
  int max_target = 2;
  for (auto& p : fds) max_target = std::max(max_target, p.first);

  const auto& lim = spec.limits;
  rlim_t nproc = 0;
  if (lim.max_processes > 0 && geteuid() != 0)
    nproc = static_cast<rlim_t>(user_task_count(getuid()) + lim.max_processes);
  const char* wd = spec.working_dir.empty() ? nullptr : spec.working_dir.c_str();
  pid_t parent = getpid();

  int err_pipe[2];
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(dev_null);
    return make_error(std::string("pipe2: ") + std::strerror(errno));
  }

  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(dev_null);
    close(err_pipe[0]);
    close(err_pipe[1]);
    return make_error(std::string("fork: ") + std::strerror(e));
  }
  if (pid == 0) {
    // Child. The error pipe and the sources move above every target first, so dup2 cannot clobber them.
    int err_fd = fcntl(err_pipe[1], F_DUPFD_CLOEXEC, max_target + 1);
    if (err_fd < 0) _exit(127);
    int moved[64];
    size_t n = std::min<size_t>(fds.size(), 64);
    for (size_t i = 0; i < n; ++i) {
      moved[i] = fcntl(fds[i].second, F_DUPFD_CLOEXEC, max_target + 1);
      if (moved[i] < 0) child_fail(err_fd, errno);
    }
    for (size_t i = 0; i < n; ++i)
      if (dup2(moved[i], fds[i].first) < 0) child_fail(err_fd, errno);
    for (int fd = 0; fd <= max_target; ++fd) {
      bool target = false;
      for (size_t i = 0; i < n; ++i) target |= fds[i].first == fd;
      if (!target) close(fd);
    }
    // Keep err_fd (close-on-exec) and close everything else above the targets.
    if (err_fd != max_target + 1) {
      if (dup2(err_fd, max_target + 1) < 0) child_fail(err_fd, errno);
      err_fd = max_target + 1;
      fcntl(err_fd, F_SETFD, FD_CLOEXEC);
    }
    close_from(max_target + 2);

    setpgid(0, 0);
    if (lim.die_with_parent) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(127);  // the parent died before the request took effect
    }
    // Ignored dispositions and blocked signals survive exec; the child starts clean.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int s : {SIGPIPE, SIGINT, SIGTERM, SIGCHLD, SIGHUP, SIGQUIT}) signal(s, SIG_DFL);

    struct rlimit rl;
    if (lim.cpu_s > 0) {
      rl.rlim_cur = static_cast<rlim_t>(std::ceil(lim.cpu_s));
      rl.rlim_max = rl.rlim_cur + 1;  // SIGXCPU first, SIGKILL a second later
      setrlimit(RLIMIT_CPU, &rl);
    }
    if (lim.memory_mb > 0) {
      rl.rlim_cur = rl.rlim_max = static_cast<rlim_t>(lim.memory_mb) << 20;
      setrlimit(RLIMIT_AS, &rl);
    }
    if (lim.file_mb > 0) {
      rl.rlim_cur = rl.rlim_max = static_cast<rlim_t>(lim.file_mb) << 20;
      setrlimit(RLIMIT_FSIZE, &rl);
    }
    if (nproc > 0) {
      rl.rlim_cur = rl.rlim_max = nproc;
      setrlimit(RLIMIT_NPROC, &rl);
    }
    if (lim.no_core_dumps) {
      rl.rlim_cur = rl.rlim_max = 0;
      setrlimit(RLIMIT_CORE, &rl);
    }
    if (lim.isolate_network) unshare(CLONE_NEWNET);  // EPERM without CAP_SYS_ADMIN: run with the network
    if (wd && chdir(wd) != 0) child_fail(err_fd, errno);
    execve(exe.c_str(), argv.data(), environ);
    child_fail(err_fd, errno);
  }

  setpgid(pid, pid);  // also from the parent: no window in which a kill of the group misses the child
  close(err_pipe[1]);
  close(dev_null);
  int child_errno = 0;
  ssize_t got;
  do {
    got = read(err_pipe[0], &child_errno, sizeof child_errno);
  } while (got < 0 && errno == EINTR);
  close(err_pipe[0]);
  if (got == static_cast<ssize_t>(sizeof child_errno)) {
    reap(pid);
    return make_error("cannot start '" + exe + "': " + std::strerror(child_errno));
  }
  return pid;
}

expected<run_result> run_process(const std::vector<std::string>& argv, const process_limits& limits,
                                 double timeout_s, size_t max_output, const std::string& working_dir) {
  auto t0 = clock_type::now();
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return make_error(std::string("pipe2: ") + std::strerror(errno));
  spawn_spec spec;
  spec.argv = argv;
  spec.fds = {{0, -1}, {1, out[1]}, {2, out[1]}};
  spec.limits = limits;
  spec.working_dir = working_dir;
  auto pid = spawn_process(spec);
  close(out[1]);
  if (!pid) {
    close(out[0]);
    return pid.err();
  }

  run_result result;
  auto deadline = t0 + std::chrono::duration_cast<clock_type::duration>(
                           std::chrono::duration<double>(std::max(0.0, timeout_s)));
  char buf[65536];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now()).count();
    if (left <= 0) {
      result.timed_out = true;
      break;
    }
    pollfd p{out[0], POLLIN, 0};
    int rc = poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (rc < 0 && errno != EINTR) break;
    if (rc <= 0) continue;
    ssize_t n = read(out[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: every process of the tree closed its output
    result.output_bytes += static_cast<size_t>(n);
    if (result.output.size() < max_output)
      result.output.append(buf, std::min(static_cast<size_t>(n), max_output - result.output.size()));
  }
  close(out[0]);
  if (result.timed_out) {
    result.exit = kill_and_reap(*pid);
  } else if (!wait_ended(*pid, deadline)) {
    result.timed_out = true;  // closed its output but went on running
    result.exit = kill_and_reap(*pid);
  } else {
    result.exit = kill_and_reap(*pid);  // reaps the ended leader, kills stragglers of its group
  }
  result.seconds = seconds_since(t0);
  return result;
}

}  // namespace crucible::kernels
