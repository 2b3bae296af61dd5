// crucible-candidate-host: the process one CPU candidate runs in (DESIGN.md §6, "out of reach"). Started by
// the eval worker for each evaluation with the fds of host_protocol.hpp; drops its privileges and refuses
// threads, processes, handlers and timers (sandbox.hpp), loads the artifact, checks what its initialisers
// left behind anyway (threads, child processes), seals itself with the seccomp allowlist, then runs
// crucible_forward on shared buffers when told to. It holds no
// reference output, no clock the worker reads, and nothing the baseline depends on: those stay in the
// worker, which also times each call from outside (this process's CPU time).
#include <dlfcn.h>
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
  proto::reply loaded{};
  runtime::regions regions;
  std::string err =
      runtime::start(argc, argv, 0, "crucible-candidate-host ARTIFACT INPUT_BYTES OUTPUT_BYTES", regions);
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
  runtime::report_loaded(loaded, err);
  runtime::serve(fn, regions);
}
