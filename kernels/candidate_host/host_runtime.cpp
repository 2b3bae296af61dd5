#include "kernels/candidate_host/host_runtime.hpp"

#include <dirent.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "kernels/candidate_host/host_protocol.hpp"
#include "kernels/candidate_host/process_probes.hpp"
#include "kernels/candidate_host/sandbox.hpp"

namespace proto = crucible::kernels::host_protocol;

namespace crucible::kernels::host_runtime {

namespace {

bool read_all(int fd, void* p, size_t n) {
  auto* c = static_cast<char*>(p);
  while (n > 0) {
    ssize_t k = read(fd, c, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    c += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

void* map_region(int fd, size_t bytes, int prot, std::string& err) {
  // Populated now, outside every clock: a first touch of each page inside a timed call would charge the
  // candidate page faults the reference, reading the worker's own mapping of the same pages, never pays.
  void* p = mmap(nullptr, bytes, prot, MAP_SHARED | MAP_POPULATE, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    err = std::string("mmap of a shared region failed: ") + std::strerror(errno);
    return nullptr;
  }
  return p;
}

char* g_in_base = nullptr;
size_t g_in_bytes = 0;
proto::reply g_fault_reply;

// A write to the read-only input region faults: say where (the worker names the input), then end. Any other
// fault re-executes under the default action, which this one-shot handler has restored.
void on_sigsegv(int, siginfo_t* info, void*) {
  char* addr = static_cast<char*>(info->si_addr);
  if (g_in_base && addr >= g_in_base && addr < g_in_base + g_in_bytes) {
    g_fault_reply.what = proto::op::call;
    g_fault_reply.failed = 1;
    g_fault_reply.input_write = addr - g_in_base;
    static const char msg[] = "the candidate wrote to an input (inputs are read-only)";
    std::memcpy(g_fault_reply.error, msg, sizeof msg);
    proto::write_all(proto::reply_fd, &g_fault_reply, sizeof g_fault_reply);
    _exit(5);
  }
}

cru_tensor to_view(const proto::tensor_desc& d, char* base) {
  cru_tensor t{};
  t.data = base + d.offset;
  t.dtype = d.dtype;
  t.ndim = d.ndim;
  for (int i = 0; i < 8; ++i) {
    t.shape[i] = d.shape[i];
    t.stride[i] = d.stride[i];
  }
  return t;
}

}  // namespace

std::string map_regions(size_t in_bytes, size_t out_bytes, regions& r) {
  std::string err;
  // The input region's descriptor is read-only: this mapping cannot be made writable (mprotect says EACCES).
  r.in = static_cast<char*>(map_region(proto::inputs_fd, in_bytes, PROT_READ, err));
  if (!r.in) return err;
  r.out = static_cast<char*>(map_region(proto::outputs_fd, out_bytes, PROT_READ | PROT_WRITE, err));
  if (!r.out) return err;
  r.in_bytes = in_bytes;
  r.out_bytes = out_bytes;
  g_in_base = r.in;
  g_in_bytes = in_bytes;
  struct sigaction sa {};
  sa.sa_sigaction = on_sigsegv;
  sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, nullptr);
  return {};
}

std::string start(int argc, char** argv, int extra, const char* usage, regions& r) {
  if (argc != 4 + extra) {
    std::fprintf(stderr, "usage: %s\nStarted by crucible-eval-worker with fds %d-%d open, not by hand.\n",
                 usage, proto::command_fd, proto::outputs_fd);
    std::exit(2);
  }
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  return map_regions(std::strtoull(argv[2], nullptr, 10), std::strtoull(argv[3], nullptr, 10), r);
}

void report_loaded(proto::reply& loaded, const std::string& err) {
  loaded.what = proto::op::loaded;
  if (!err.empty()) {
    loaded.failed = 1;
    set_text(loaded.error, err);
  }
  if (!proto::write_all(proto::reply_fd, &loaded, sizeof loaded) || loaded.failed)
    _exit(loaded.failed ? 3 : 4);
}

int count_threads() {
  DIR* d = opendir("/proc/self/task");
  if (!d) return -1;
  int n = 0;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n;
}

// As a subreaper, orphans of a double fork count; __WALL counts clones that do not signal their parent too.
int running_children() {
  for (;;) {
    int status = 0;
    pid_t p = waitpid(-1, &status, WNOHANG | __WALL);
    if (p > 0) continue;
    return p == 0 ? 1 : 0;
  }
}

void set_text(char* dst, const std::string& s) {
  std::snprintf(dst, proto::error_chars, "%s", s.c_str());
}

void serve(crucible_forward_fn fn, const regions& r) {
  static proto::command cmd;
  static proto::reply rep;
  cru_tensor in[proto::max_tensors];
  for (;;) {
    if (!read_all(proto::command_fd, &cmd, sizeof cmd)) _exit(0);  // the worker closed the pipe
    rep = proto::reply{};
    rep.what = cmd.what;
    if (cmd.what == proto::op::quit) _exit(0);
    if (cmd.what == proto::op::call) {
      const int n = cmd.n_inputs < 0                    ? 0
                    : cmd.n_inputs > proto::max_tensors ? proto::max_tensors
                                                        : cmd.n_inputs;
      for (int i = 0; i < n; ++i) in[i] = to_view(cmd.inputs[i], r.in);
      cru_tensor out = to_view(cmd.output, r.out);
      cru_context ctx{};
      ctx.abi_version = CRUCIBLE_ABI_VERSION;
      ctx.device = -1;
      try {
        rep.rc = fn(&ctx, in, n, &out, 1);
      } catch (const disguised_output& e) {
        rep.failed = 1;
        rep.disguised_output = 1;
        set_text(rep.error, e.what());
      } catch (const std::exception& e) {
        rep.failed = 1;
        set_text(rep.error, std::string("candidate threw: ") + e.what());
      } catch (...) {
        rep.failed = 1;
        set_text(rep.error, "candidate threw a non-standard exception");
      }
    }
    std::string names;
    rep.denied = sandbox::take_denied(names);
    set_text(rep.denied_names, names);
    set_text(rep.probes, process_probes::take());
    if (!proto::write_all(proto::reply_fd, &rep, sizeof rep)) _exit(0);
  }
}

}  // namespace crucible::kernels::host_runtime
