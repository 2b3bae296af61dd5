#include "kernels/eval_worker/forked_evaluation.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "kernels/eval/frame_io.hpp"
#include "kernels/eval/subprocess.hpp"
#include "messages/envelope.hpp"

namespace crucible::kernels {

namespace {

using clock_type = std::chrono::steady_clock;

double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

// The processes whose parent is `parent` (zombies included), from /proc.
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    std::ifstream in("/proc/" + std::string(e->d_name) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so parse after the last ')'.
    const auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 1));
    char state = 0;
    long ppid = 0;
    if (rest >> state >> ppid && ppid == parent) out.push_back(static_cast<pid_t>(pid));
  }
  closedir(d);
  return out;
}

// Kills and reaps every child this process has but those in `keep` (the children it had before the fork):
// after a forked evaluation, what it left, its orphans reparented here. Each pass ends the children found,
// whose own children then become this process's; one that will not die (stuck in the kernel) is reported.
bool sweep_children(const std::vector<pid_t>& keep) {
  const pid_t self = getpid();
  auto left = [&] {
    auto kids = children_of(self);
    kids.erase(std::remove_if(kids.begin(), kids.end(),
                              [&](pid_t k) { return std::find(keep.begin(), keep.end(), k) != keep.end(); }),
               kids.end());
    return kids;
  };
  for (int pass = 0; pass < 32; ++pass) {
    const auto kids = left();
    if (kids.empty()) return true;
    for (pid_t k : kids) {
      if (getpgid(k) == k) kill(-k, SIGKILL);  // a group it leads: what it started too
      kill(k, SIGKILL);
    }
    const auto t0 = clock_type::now();
    for (pid_t k : kids)
      while (waitpid(k, nullptr, WNOHANG) == 0 && ms_since(t0) < 2000)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return left().empty();
}

}  // namespace

bool adopt_orphans() {
  return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0;
}

forked_outcome evaluate_forked(const std::function<bench_result()>& evaluate,
                               const std::vector<int>& close_in_child, const fork_hooks& hooks) {
  forked_outcome out;
  int answer[2];
  if (pipe2(answer, O_CLOEXEC) != 0) {
    out.result.status = "error";
    out.result.error = std::string("cannot fork the evaluation: pipe2: ") + std::strerror(errno);
    return out;
  }
  const pid_t parent = getpid();
  const auto before = children_of(parent);
  const auto t0 = clock_type::now();
  if (hooks.before) hooks.before();
  const pid_t child = fork();
  if (child == 0) {
    if (hooks.after_in_child) hooks.after_in_child();
    for (int fd : close_in_child) close(fd);
    close(answer[0]);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(9);  // the parent died before the death signal was armed
    bench_result r;
    try {
      r = evaluate();
    } catch (const std::exception& e) {
      r.status = "error";
      r.error = std::string("evaluation failed: ") + e.what();
    }
    const bool sent = static_cast<bool>(write_frame(answer[1], encode(r, "eval_worker")));
    std::fflush(nullptr);
    _exit(sent ? 0 : 4);
  }
  const int fork_errno = errno;
  if (hooks.after_in_parent) hooks.after_in_parent();
  const double fork_ms = ms_since(t0);
  close(answer[1]);
  if (child < 0) {
    close(answer[0]);
    out.result.status = "error";
    out.result.error = std::string("cannot fork the evaluation: ") + std::strerror(fork_errno);
    return out;
  }
  // The answer, or the child's end without one. A descendant that inherited the pipe (a candidate's own
  // fork) keeps it open past the child's death: the child's exit is watched, not only the pipe's EOF.
  frame_read answer_frame;
  answer_frame.status = frame_status::eof;
  int wait_status = 0;
  bool reaped = false;
  for (;;) {
    pollfd pf{answer[0], POLLIN, 0};
    if (poll(&pf, 1, reaped ? 0 : 100) > 0) {
      answer_frame = read_frame(answer[0], reaped ? 1.0 : -1.0);
      break;
    }
    if (reaped) break;
    if (waitpid(child, &wait_status, WNOHANG) == child) reaped = true;  // one more look at the pipe
  }
  close(answer[0]);
  if (!reaped) {
    // It answered; it ends with _exit right after (a second, else it is killed with what it left).
    const auto t_end = clock_type::now();
    while (waitpid(child, &wait_status, WNOHANG) == 0) {
      if (ms_since(t_end) > 1000) {
        kill(child, SIGKILL);
        waitpid(child, &wait_status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  const exit_info how = decode_wait_status(wait_status);
  out.left_running = !sweep_children(before);

  char note[160];
  std::snprintf(note, sizeof note,
                "worker: evaluated in process %d, forked for it in %.1f ms; it ended with %s",
                static_cast<int>(child), fork_ms, how.describe().c_str());
  if (answer_frame.status == frame_status::ok) {
    if (auto r = decode_as<bench_result>(answer_frame.payload)) {
      out.result = std::move(*r);
    } else {
      // The child's pipe carries nothing but its answer; a candidate that wrote into it spoiled that answer.
      out.result.status = "error";
      out.result.error = "malformed answer from the evaluation's process: " + r.message();
    }
  } else {
    out.result.status = "crash";
    out.result.worker_died = true;
    out.result.error = "the evaluation's process (forked for it) died before answering: " + how.describe();
  }
  out.result.notes.push_back(note);
  if (out.left_running)
    out.result.notes.push_back(
        "worker retired after this evaluation: processes the evaluation started "
        "outlived every attempt to end them");
  return out;
}

}  // namespace crucible::kernels
