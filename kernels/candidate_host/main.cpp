// crucible-candidate-host: the process one CPU candidate runs in (DESIGN.md §6, "out of reach"). Started by
// the eval worker for each evaluation with the fds of host_protocol.hpp; drops its privileges and refuses
// threads, processes, handlers and timers (sandbox.hpp), loads the artifact, checks what its initialisers
// left behind anyway (threads, child processes), seals itself with the seccomp allowlist, then runs
// crucible_forward on shared buffers when told to. It holds no
// reference output, no clock the worker reads, and nothing the baseline depends on: those stay in the
// worker, which also times each call from outside (this process's CPU time).
#include <dlfcn.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "kernels/abi/crucible_abi.h"
#include "kernels/candidate_host/host_protocol.hpp"
#include "kernels/candidate_host/host_runtime.hpp"
#include "kernels/candidate_host/process_probes.hpp"
#include "kernels/candidate_host/sandbox.hpp"

namespace proto = crucible::kernels::host_protocol;
namespace sandbox = crucible::kernels::sandbox;
namespace runtime = crucible::kernels::host_runtime;

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
  runtime::regions regions;
  std::string err =
      runtime::map_regions(std::strtoull(argv[2], nullptr, 10), std::strtoull(argv[3], nullptr, 10), regions);
  crucible_forward_fn fn = nullptr;
  if (err.empty()) err = sandbox::seal_for_loading();
  if (err.empty()) {
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
    loaded.threads = runtime::count_threads();
    loaded.children = runtime::running_children();
    err = sandbox::install();
    loaded.sandboxed = err.empty() ? 1 : 0;
  }
  if (!err.empty()) {
    loaded.failed = 1;
    runtime::set_text(loaded.error, err);
  }
  if (!proto::write_all(proto::reply_fd, &loaded, sizeof loaded) || loaded.failed)
    _exit(loaded.failed ? 3 : 4);
  runtime::serve(fn, regions);
}
