// crucible-candidate-host: the process one CPU candidate runs in (DESIGN.md §6, "out of reach"). Started by
// the eval worker for each evaluation with the fds of host_protocol.hpp; drops its privileges and refuses
// threads, processes, handlers and timers (sandbox.hpp), loads the artifact, checks what its initialisers
// left behind anyway (threads, child processes), seals itself with the seccomp allowlist, then runs
// crucible_forward on shared buffers when told to. It holds no
// reference output, no clock the worker reads, and nothing the baseline depends on: those stay in the
// worker, which also times each call from outside (this process's CPU time).
#include <dirent.h>
#include <dlfcn.h>
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
#include <string>

#include "kernels/abi/crucible_abi.h"
#include "kernels/candidate_host/host_protocol.hpp"
#include "kernels/candidate_host/process_probes.hpp"
#include "kernels/candidate_host/sandbox.hpp"

namespace proto = crucible::kernels::host_protocol;
namespace sandbox = crucible::kernels::sandbox;

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

void set_text(char* dst, const std::string& s) {
  std::snprintf(dst, proto::error_chars, "%s", s.c_str());
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

// Child processes still running (reaping those that ended). As a subreaper, orphans of a double fork count;
// __WALL counts clones that do not signal their parent too.
int running_children() {
  for (;;) {
    int status = 0;
    pid_t p = waitpid(-1, &status, WNOHANG | __WALL);
    if (p > 0) continue;
    return p == 0 ? 1 : 0;
  }
}

void* map_region(int fd, size_t bytes, int prot, std::string& err) {
  void* p = mmap(nullptr, bytes, prot, MAP_SHARED, fd, 0);
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

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr,
                 "usage: crucible-candidate-host ARTIFACT INPUT_BYTES OUTPUT_BYTES\n"
                 "Started by crucible-eval-worker with fds %d-%d open, not by hand.\n",
                 proto::command_fd, proto::outputs_fd);
    return 2;
  }
  // Orphans of whatever the candidate's initialisers fork come back here, where the census sees them.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  proto::reply loaded{};
  loaded.what = proto::op::loaded;
  std::string err;
  const size_t in_bytes = std::strtoull(argv[2], nullptr, 10),
               out_bytes = std::strtoull(argv[3], nullptr, 10);
  // The input region's descriptor is read-only: this mapping cannot be made writable (mprotect says EACCES).
  char* in_base = static_cast<char*>(map_region(proto::inputs_fd, in_bytes, PROT_READ, err));
  char* out_base =
      in_base ? static_cast<char*>(map_region(proto::outputs_fd, out_bytes, PROT_READ | PROT_WRITE, err))
              : nullptr;
  crucible_forward_fn fn = nullptr;
  g_in_base = in_base;
  g_in_bytes = in_bytes;
  if (out_base) {
    struct sigaction sa {};
    sa.sa_sigaction = on_sigsegv;
    sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, nullptr);
    err = sandbox::seal_for_loading();
  }
  if (out_base && err.empty()) {
    crucible::kernels::process_probes::arm();  // from here on, what calls them is the artifact
    dlerror();
    void* handle = crucible::kernels::process_probes::real_dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* e = dlerror();
      err = std::string("dlopen failed: ") + (e ? e : "unknown error");
    } else {
      fn = reinterpret_cast<crucible_forward_fn>(
          crucible::kernels::process_probes::real_dlsym(handle, "crucible_forward"));
      if (!fn) err = "the artifact does not export crucible_forward (declare it extern \"C\")";
    }
  }
  if (err.empty()) {
    loaded.threads = count_threads();
    loaded.children = running_children();
    err = sandbox::install();
    loaded.sandboxed = err.empty() ? 1 : 0;
  }
  if (!err.empty()) {
    loaded.failed = 1;
    set_text(loaded.error, err);
  }
  if (!proto::write_all(proto::reply_fd, &loaded, sizeof loaded) || loaded.failed)
    _exit(loaded.failed ? 3 : 4);

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
      for (int i = 0; i < n; ++i) in[i] = to_view(cmd.inputs[i], in_base);
      cru_tensor out = to_view(cmd.output, out_base);
      cru_context ctx{};
      ctx.abi_version = CRUCIBLE_ABI_VERSION;
      ctx.device = -1;
      try {
        rep.rc = fn(&ctx, in, n, &out, 1);
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
    set_text(rep.probes, crucible::kernels::process_probes::take());
    if (!proto::write_all(proto::reply_fd, &rep, sizeof rep)) _exit(0);
  }
}
