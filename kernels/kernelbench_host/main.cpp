// crucible-kernelbench-host: the process one KernelBench candidate (`ModelNew` in a Python file) runs in,
// the Python twin of crucible-candidate-host (DESIGN.md §6, "out of reach"). The host's own set-up comes
// first and unsealed: the regions, CPython with torch on one thread, the problem's module (its
// get_init_inputs and get_inputs). Then the candidate's part runs under the loading seal (no threads,
// processes, file writes or executable memory): its module executed, ModelNew built under the problem's
// seed, one forward pass on the problem's inputs so lazy imports and first-use set-up happen now. Then the
// census, the seccomp allowlist, the process probes armed (torch.utils.cpp_extension's run-time builds
// refused with an error beforehand), and the same call loop as every host (host_runtime.hpp): each call wraps
// the shared regions as tensors (the inputs read-only: an in-place op on them faults and is reported), runs
// forward() and copies its result into the output region.
#include <malloc.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <pybind11/embed.h>

#include "kernels/abi/crucible_abi.h"
#include "kernels/candidate_host/host_protocol.hpp"
#include "kernels/candidate_host/host_runtime.hpp"
#include "kernels/candidate_host/process_probes.hpp"
#include "kernels/candidate_host/sandbox.hpp"
#include "kernels/python/embedded_python.hpp"
#include "kernels/python/kernelbench_module.hpp"
#include "kernels/python/kernelbench_reference.hpp"
#include "kernels/python/kernelbench_tensors.hpp"
#include "kernels/reference/torch_dtypes.hpp"

namespace proto = crucible::kernels::host_protocol;
namespace sandbox = crucible::kernels::sandbox;
namespace runtime = crucible::kernels::host_runtime;
namespace kb = crucible::kernels;

namespace {

std::unique_ptr<kb::kernelbench_module> g_candidate;

// The candidate's forward pass as the ABI's entry point.
int python_forward(const cru_context*, const cru_tensor* in, int32_t n, cru_tensor* out, int32_t) {
  std::vector<at::Tensor> xs;
  xs.reserve(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) xs.push_back(kb::tensor_of_view(in[i]));
  bool disguised = false;
  auto y = kb::kernelbench_forward(*g_candidate, xs, &disguised);
  if (!y) {
    if (disguised) throw runtime::disguised_output(y.message());
    throw std::runtime_error(y.message());
  }
  at::Tensor o = kb::tensor_of_view(*out);
  if (y->sizes() != o.sizes() || y->scalar_type() != o.scalar_type())
    throw std::runtime_error("ModelNew returned " + kb::describe(*y) + ", the reference " + kb::describe(o));
  o.copy_(*y);
  return 0;
}

// torch.utils.cpp_extension builds an extension at run time: it writes sources and starts a compiler, which
// the sandbox refuses, and the refusal would read as a hack (sandbox_violation) against an honest candidate.
// Until such builds run as a step outside the sandbox, asking for one raises an error that says so: a
// candidate with a fallback is measured as what it then runs, one without fails with that message.
std::string refuse_extension_builds() {
  try {
    pybind11::exec(R"PY(
import sys, types, torch.utils
def _not_here(*args, **kwargs):
    raise RuntimeError("building a C++/CUDA extension at run time (torch.utils.cpp_extension) is not "
                       "supported by Crucible's KernelBench host on this target yet")
try:
    import torch.utils.cpp_extension as _extensions
except ImportError:
    # It needs setuptools, absent from a fresh Debian: a stand-in keeps `from torch.utils.cpp_extension
    # import load_inline` working, so a candidate with a fallback still loads and runs it.
    _extensions = types.ModuleType("torch.utils.cpp_extension")
    def _missing(name):
        if name.startswith("__"):  # what the import system asks of any module
            raise AttributeError(name)
        raise RuntimeError("torch.utils.cpp_extension." + name + " is not available here (no setuptools)")
    _extensions.__getattr__ = _missing
    sys.modules["torch.utils.cpp_extension"] = _extensions
    torch.utils.cpp_extension = _extensions
for _name in ("load", "load_inline"):
    setattr(_extensions, _name, _not_here)
)PY");
  } catch (const std::exception& e) {
    return std::string("torch.utils.cpp_extension: ") + e.what();
  }
  return {};
}

// The candidate's part of loading, under the loading seal. The warm-up pass's failure is not the load's:
// the same failure comes back from the first call, where it is judged like any call's.
std::string load_candidate(const char* path, const kb::kernelbench_module& problem) {
  auto m = kb::kernelbench_module::load(path, "ModelNew");
  if (!m) return m.message();
  if (auto st = m->instantiate(kb::kernelbench_model_seed, "cpu", &problem); !st) return st.message();
  g_candidate = std::make_unique<kb::kernelbench_module>(std::move(*m));
  if (auto xs = kb::kernelbench_inputs(*g_candidate, 0, &problem); xs)
    (void)kb::kernelbench_forward(*g_candidate, *xs);
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  proto::reply loaded{};
  runtime::regions regions;
  std::string err = runtime::start(
      argc, argv, 1, "crucible-kernelbench-host CANDIDATE.py INPUT_BYTES OUTPUT_BYTES PROBLEM.py", regions);
  // The host's own set-up: one thread for torch, and an allocator that keeps freed memory, as the reference
  // has in the worker (kernels/eval_worker/main.cpp): otherwise every call's result tensor page-faults afresh
  // and a module measures slower than itself (an A/A run: 0.76x on ReLU). Set before the probes are armed.
  std::unique_ptr<kb::kernelbench_module> problem;
  if (err.empty()) {
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    at::set_num_threads(1);
    if (auto st = kb::start_python(); !st) err = st.message();
  }
  if (err.empty()) {
    auto p = kb::kernelbench_module::load(argv[4]);
    if (p)
      problem = std::make_unique<kb::kernelbench_module>(std::move(*p));
    else
      err = "the problem module: " + p.message();
  }
  if (err.empty()) err = refuse_extension_builds();
  const int own_threads = err.empty() ? runtime::count_threads() : 0;
  if (err.empty()) err = sandbox::seal_for_loading();
  if (err.empty()) err = load_candidate(argv[1], *problem);
  if (err.empty()) {
    // Threads the host had before the candidate's part are its own, not what loading left behind.
    loaded.threads = 1 + std::max(0, runtime::count_threads() - own_threads);
    loaded.children = runtime::running_children();
    err = sandbox::install();
    loaded.sandboxed = err.empty() ? 1 : 0;
  }
  runtime::report_loaded(loaded, err);
  crucible::kernels::process_probes::arm();
  runtime::serve(python_forward, regions);
}
