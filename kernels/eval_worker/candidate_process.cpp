#include "kernels/eval_worker/candidate_process.hpp"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "kernels/candidate_host/host_protocol.hpp"
#include "kernels/eval/subprocess.hpp"

namespace crucible::kernels {

namespace proto = host_protocol;

namespace {

using clock_type = std::chrono::steady_clock;

double ms_of(const timespec& a, const timespec& b) {
  return (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
}

size_t page_rounded(size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return std::max(page, (bytes + page - 1) / page * page);
}

// Reads exactly n bytes by the deadline: 1 done, 0 end of file or error, -1 deadline passed.
int read_by(int fd, void* p, size_t n, clock_type::time_point deadline) {
  auto* c = static_cast<char*>(p);
  while (n > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now()).count();
    if (left < 0) return -1;
    pollfd pfd{fd, POLLIN, 0};
    int r = poll(&pfd, 1, static_cast<int>(std::min<long long>(left + 1, INT_MAX)));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return 0;
    if (r == 0) continue;
    ssize_t k = read(fd, c, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return 0;
    c += k;
    n -= static_cast<size_t>(k);
  }
  return 1;
}

proto::tensor_desc describe(const cru_tensor& t, const shared_region& region) {
  proto::tensor_desc d;
  d.offset = static_cast<uint64_t>(static_cast<const char*>(t.data) - region.base());
  d.dtype = t.dtype;
  d.ndim = t.ndim;
  for (int i = 0; i < 8; ++i) {
    d.shape[i] = t.shape[i];
    d.stride[i] = t.stride[i];
  }
  return d;
}

}  // namespace

shared_region::~shared_region() {
  if (base_) munmap(base_, bytes_);
  if (fd_ >= 0) close(fd_);
}

std::string shared_region::create(size_t bytes, const char* name) {
  bytes_ = page_rounded(bytes);
  fd_ = memfd_create(name, MFD_CLOEXEC);
  if (fd_ < 0) return std::string("memfd_create: ") + std::strerror(errno);
  if (ftruncate(fd_, static_cast<off_t>(bytes_)) != 0)
    return std::string("ftruncate: ") + std::strerror(errno);
  void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED) return std::string("mmap: ") + std::strerror(errno);
  base_ = static_cast<char*>(p);
  return {};
}

candidate_process::~candidate_process() {
  stop();
}

namespace {

std::string beside_this_executable(const char* name) {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return name;
  return (exe.parent_path() / name).string();
}

}  // namespace

std::string candidate_process::default_host_path() {
  return beside_this_executable("crucible-candidate-host");
}

std::string candidate_process::kernelbench_host_path() {
  return beside_this_executable("crucible-kernelbench-host");
}

std::string candidate_process::start(const std::string& host_path, const std::string& artifact,
                                     const shared_region& inputs, const shared_region& outputs,
                                     const std::vector<std::string>& extra_args) {
  inputs_ = &inputs;
  outputs_ = &outputs;
  // A read-only open file description of the input region: the host's mapping of it can never be writable.
  const std::string self_fd = "/proc/self/fd/" + std::to_string(inputs.fd());
  int ro = open(self_fd.c_str(), O_RDONLY | O_CLOEXEC);
  if (ro < 0) return "cannot reopen the input region read-only: " + std::string(std::strerror(errno));
  int cmd[2], rep[2];
  if (pipe2(cmd, O_CLOEXEC) != 0 || pipe2(rep, O_CLOEXEC) != 0) {
    close(ro);
    return std::string("pipe: ") + std::strerror(errno);
  }
  spawn_spec spec;
  spec.argv = {host_path, artifact, std::to_string(inputs.bytes()), std::to_string(outputs.bytes())};
  spec.argv.insert(spec.argv.end(), extra_args.begin(), extra_args.end());
  spec.fds = {{0, -1},
              {1, 1},
              {2, 2},
              {proto::command_fd, cmd[0]},
              {proto::reply_fd, rep[1]},
              {proto::inputs_fd, ro},
              {proto::outputs_fd, outputs.fd()}};
  spec.limits.no_core_dumps = true;
  auto pid = spawn_process(spec);
  close(ro);
  close(cmd[0]);
  close(rep[1]);
  cmd_fd_ = cmd[1];
  rep_fd_ = rep[0];
  if (!pid) {
    stop();
    return "cannot start the candidate host: " + pid.message();
  }
  pid_ = *pid;
  // Out of memory, the kernel ends the candidate's process first, never the worker.
  if (std::ofstream adj("/proc/" + std::to_string(pid_) + "/oom_score_adj"); adj) adj << 1000;
  if (clock_getcpuclockid(pid_, &cpu_clock_) != 0) {
    stop();
    return "cannot read the candidate host's CPU clock";
  }
  proto::reply loaded{};
  // Loading runs the artifact's initialisers: as long as a call may take.
  int got = read_by(rep_fd_, &loaded, sizeof loaded, clock_type::now() + std::chrono::seconds(30));
  if (got != 1 || loaded.what != proto::op::loaded) {
    std::string how =
        got < 0 ? "did not finish loading the artifact in 30 s" : "ended while loading the artifact";
    pid_t p = pid_;
    pid_ = -1;
    auto ex = got < 0 ? kill_and_reap(p) : reap_with_grace(p, 1.0);
    stop();
    if (!ex.exited) died_at_load_ = true;
    if (!ex.exited && ex.signal == SIGSYS) {
      sandbox_killed_at_load_ = true;
      return "the sandbox ended the candidate's process while its initialisers ran (a refused system call "
             "with signals blocked: a thread or a process)";
    }
    return "the candidate host " + how + (got < 0 ? "" : " (" + ex.describe() + ")");
  }
  timespec now{};
  clock_gettime(cpu_clock_, &now);
  last_reply_cpu_ms_ = now.tv_sec * 1e3 + now.tv_nsec / 1e6;
  threads_after_load_ = loaded.threads;
  children_after_load_ = loaded.children != 0;
  if (loaded.failed) {
    std::string e = loaded.error;
    stop();
    return e;
  }
  return {};
}

bool candidate_process::pin(int cpu) {
  if (pid_ <= 0 || cpu < 0) return false;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(pid_, sizeof set, &set) == 0;
}

candidate_call candidate_process::round_trip(const void* cmd, double deadline_s) {
  candidate_call c;
  if (pid_ <= 0) {
    c.crashed = true;
    c.error = "the candidate host is not running";
    return c;
  }
  timespec c0{}, c1{};
  clock_gettime(cpu_clock_, &c0);
  if (last_reply_cpu_ms_ >= 0) {
    const double gap = c0.tv_sec * 1e3 + c0.tv_nsec / 1e6 - last_reply_cpu_ms_;
    outside_ms_ += gap;
    max_outside_ms_ = std::max(max_outside_ms_, gap);
    outside_gaps_ms_.push_back(gap);
  }
  const auto t0 = clock_type::now();
  proto::reply rep{};
  int got = 0;
  if (proto::write_all(cmd_fd_, cmd, sizeof(proto::command)))
    got = read_by(
        rep_fd_, &rep, sizeof rep,
        t0 + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(deadline_s)));
  const auto t1 = clock_type::now();
  clock_gettime(cpu_clock_, &c1);
  last_reply_cpu_ms_ = c1.tv_sec * 1e3 + c1.tv_nsec / 1e6;
  c.wall_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  c.cpu_ms = ms_of(c0, c1);
  if (got != 1) {
    pid_t p = pid_;
    pid_ = -1;
    auto ex = got < 0 ? kill_and_reap(p) : reap_with_grace(p, 1.0);
    if (got < 0) {
      c.hung = true;
      char line[128];
      std::snprintf(line, sizeof line, "the call did not return within %.3g s", deadline_s);
      c.error = line;
    } else if (!ex.exited && ex.signal == SIGSYS) {
      c.crashed = c.sandbox_killed = true;
      c.error =
          "the sandbox ended the candidate's process: a refused system call with signals blocked (a "
          "thread or a process)";
    } else {
      c.crashed = true;
      c.error = "the candidate died in the call: " + ex.describe();
    }
    stop();
    return c;
  }
  c.denied = rep.denied;
  c.denied_names = rep.denied_names;
  c.probes = rep.probes;
  if (rep.input_write >= 0) {  // the host said so and ended
    c.input_write = rep.input_write;
    c.crashed = true;
    c.error = rep.error;
    pid_t p = pid_;
    pid_ = -1;
    reap_with_grace(p, 1.0);
    stop();
    return c;
  }
  c.disguised_output = rep.failed && rep.disguised_output;
  if (rep.failed)
    c.error = rep.error;
  else if (rep.rc != 0)
    c.error = "crucible_forward returned " + std::to_string(rep.rc);
  c.ok = c.error.empty();
  return c;
}

candidate_call candidate_process::call(const std::vector<cru_tensor>& inputs, const cru_tensor& output,
                                       double deadline_s) {
  static proto::command cmd;
  cmd = proto::command{};
  cmd.what = proto::op::call;
  cmd.n_inputs = static_cast<int32_t>(std::min<size_t>(inputs.size(), proto::max_tensors));
  for (int i = 0; i < cmd.n_inputs; ++i) cmd.inputs[i] = describe(inputs[static_cast<size_t>(i)], *inputs_);
  cmd.output = describe(output, *outputs_);
  return round_trip(&cmd, deadline_s);
}

candidate_call candidate_process::null_call(double deadline_s) {
  static proto::command cmd;
  cmd = proto::command{};
  cmd.what = proto::op::null;
  return round_trip(&cmd, deadline_s);
}

int candidate_process::threads() const {
  if (pid_ <= 0) return -1;
  std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("Threads:", 0) == 0) return std::atoi(line.c_str() + 8);
  return -1;
}

void candidate_process::stop() {
  if (cmd_fd_ >= 0) close(cmd_fd_);
  if (rep_fd_ >= 0) close(rep_fd_);
  cmd_fd_ = rep_fd_ = -1;
  if (pid_ > 0) {
    // Closing the command pipe ends an idle host; whatever it started goes with its process group.
    reap_with_grace(pid_, 0.5);
    pid_ = -1;
  }
}

}  // namespace crucible::kernels
