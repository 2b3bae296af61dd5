// crucible-eval-worker: the isolated process that runs candidates (DESIGN.md §5). Reads length-prefixed
// eval_request envelopes from fd 3 and answers each with a bench_result envelope on fd 4; stdout and stderr
// belong to the candidates (the client sends them to a log). On start it sends one bench_result with status
// "ready" (LibTorch is loaded by then). A candidate that crashes or hangs takes this
// process down with it, never the runtime: the worker client notices and starts a fresh one.
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "kernels/eval/frame_io.hpp"
#include "kernels/eval_worker/candidate_evaluator.hpp"
#include "kernels/eval_worker/forked_evaluation.hpp"
#ifdef CRUCIBLE_WITH_PYTHON
#include "kernels/python/embedded_python.hpp"
#include "kernels/python/kernelbench_reference.hpp"
#endif
#ifdef CRUCIBLE_WITH_CUDA
#include "kernels/eval_worker/cuda/cuda_evaluator.hpp"
#endif
#include "messages/envelope.hpp"

namespace {

constexpr const char* worker_name = "eval_worker";

int usage() {
  std::fprintf(
      stderr,
      "usage: crucible-eval-worker [--in-fd N] [--out-fd N] [--device N] [--standby] [--warm-python]\n"
      "                            [--fork-modules]\n"
      "Speaks length-prefixed msgpack envelopes: eval_request in (default fd 3), bench_result out "
      "(default fd 4). --device: the CUDA device for target cuda requests (builds with "
      "CRUCIBLE_CUDA). --standby: started ahead, beside a worker that measures (the client's "
      "standby). --warm-python: start Python and import torch before ready (the request will be a "
      "KernelBench module). --fork-modules: evaluate each KernelBench module in a child forked for it (this "
      "process never binds the device for one, and is not retired after one). Started by the benchmarker's "
      "worker client, not by hand.\n");
  return 2;
}

bool reply(int fd, const crucible::bench_result& r) {
  return static_cast<bool>(crucible::kernels::write_frame(fd, crucible::encode(r, worker_name)));
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::string fmt_ms(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f ms", ms);
  return buf;
}

crucible::bench_result error_result(const std::string& message) {
  crucible::bench_result r;
  r.status = "error";
  r.error = message;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const auto t_main = std::chrono::steady_clock::now();
  int in_fd = 3, out_fd = 4, device = -1;
  bool standby = false, warm_python = false, fork_modules = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if ((a == "--in-fd" || a == "--out-fd") && i + 1 < argc) {
      (a == "--in-fd" ? in_fd : out_fd) = std::atoi(argv[++i]);
    } else if (a == "--device" && i + 1 < argc) {
      device = std::atoi(argv[++i]);
    } else if (a == "--standby") {
      standby = true;
    } else if (a == "--warm-python") {
      warm_python = true;
    } else if (a == "--fork-modules") {
      fork_modules = true;
    } else {
      return usage();
    }
  }
  if (fcntl(in_fd, F_GETFD) < 0 || fcntl(out_fd, F_GETFD) < 0) {
    std::fprintf(stderr, "crucible-eval-worker: fds %d and %d must be open (request and reply pipes)\n",
                 in_fd, out_fd);
    return usage();
  }
  // The protocol pipes are not for anything a candidate might exec.
  fcntl(in_fd, F_SETFD, FD_CLOEXEC);
  fcntl(out_fd, F_SETFD, FD_CLOEXEC);
  // Nothing without CAP_SYS_PTRACE may read this process's memory (/proc/PID/mem, process_vm_readv): the
  // reference's outputs live here, and a candidate's process holds no capabilities.
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  // A vanished client is a write error, handled below, not a signal.
  signal(SIGPIPE, SIG_IGN);
  // LibTorch allocates every eager intermediate with malloc. By default glibc maps large blocks afresh and
  // returns them on free, with a threshold that moves with the heap's history, so the same eager chain
  // costs 1x or 5x depending on whether its buffers page-fault again: a baseline that moved between
  // evaluations of one candidate from 5 to 36 ms. Keeping freed memory in the heap puts eager in its
  // fast steady state in every evaluation (the conservative baseline for a speedup).
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);

  crucible::kernels::candidate_evaluator evaluator;
  // Ready: the client starts the per-evaluation deadline only now, so loading LibTorch on a busy machine
  // is not charged to the first candidate. Its note says where the start went (the client adds the time
  // before main: exec and loading the libraries).
  crucible::bench_result ready;
  ready.status = "ready";
  ready.worker = evaluator.worker_id();
  double bind_ms = -1;  // how long binding the device took, said with the result that paid for it
  std::string bind_parts;
#ifdef CRUCIBLE_WITH_CUDA
  // The device is bound before "ready", so CUDA's start-up is not charged to the first candidate; a standby
  // worker's too, while another worker measures. Creating a context there was predicted to disturb the
  // measurement; on an H200 it did not, measurably (bench/RESULTS.md, 2026-12-02: the evaluations it
  // overlapped moved by at most 0.85%, less than run-to-run). CRUCIBLE_STANDBY_BIND=request leaves a
  // standby's device alone until its first request, to measure that again side by side.
  std::unique_ptr<crucible::kernels::cuda_evaluator> gpu;
  auto bind = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    gpu = std::make_unique<crucible::kernels::cuda_evaluator>(device < 0 ? 0 : device);
    bind_ms = ms_since(t0);
    bind_parts = gpu->bind_parts();
    std::fprintf(stderr, "crucible-eval-worker: %s\n", gpu->describe().c_str());
  };
  const char* late = std::getenv("CRUCIBLE_STANDBY_BIND");
  // A worker that forks for modules binds the device in each child, never in itself: a CUDA context does not
  // survive fork. torch's availability check then asks NVML, which leaves the driver alone.
  if (fork_modules && device >= 0) setenv("PYTORCH_NVML_BASED_CUDA_CHECK", "1", 0);
  if (device >= 0 && !fork_modules && !(standby && late && std::string(late) == "request")) bind();
#endif
  // Python's start and torch's imports (seconds) before ready too, where the client expects a module.
  std::string python_note;
#ifdef CRUCIBLE_WITH_PYTHON
  if (warm_python) {
    const auto t0 = std::chrono::steady_clock::now();
    auto warmed = crucible::kernels::warm_kernelbench_python();
    python_note = warmed ? ", Python and torch imported in " + fmt_ms(ms_since(t0))
                         : ", Python not warmed (" + warmed.message() + ")";
  }
#else
  (void)warm_python;
#endif
  std::string fork_note;
  if (fork_modules) {
    fork_note = "; KernelBench modules evaluated in children forked for them";
#ifdef CRUCIBLE_WITH_CUDA
    // Whatever the imports did: a driver already initialized here would fail every child's device.
    if (crucible::kernels::cuda_driver_initialized()) {
      fork_modules = false;
      fork_note = "; modules evaluated here, not forked: the CUDA driver was initialized while loading";
      if (device >= 0) bind();
    }
#endif
    if (fork_modules && !crucible::kernels::adopt_orphans()) {
      fork_modules = false;
      fork_note = "; modules evaluated here, not forked: this process cannot reap its evaluations' orphans";
    }
  }
  ready.notes.push_back(
      "ready " + fmt_ms(ms_since(t_main)) + " after main" +
      (bind_ms >= 0 ? ", of which binding the device " + fmt_ms(bind_ms) + " (" + bind_parts + ")"
                    : std::string()) +
      python_note + fork_note +
      (standby && bind_ms < 0 && !fork_modules ? "; a standby: the device is bound at the first request"
                                               : ""));
  bind_ms = -1;
  if (!reply(out_fd, ready)) return 4;
  for (;;) {
    auto frame = crucible::kernels::read_frame(in_fd);
    if (frame.status == crucible::kernels::frame_status::eof) return 0;
    if (frame.status != crucible::kernels::frame_status::ok) {
      // The stream cannot be resynchronized after a broken frame: say why and leave.
      reply(out_fd, error_result("bad frame: " + frame.error));
      return 3;
    }
    auto request = crucible::decode_as<crucible::eval_request>(frame.payload);
    if (!request) {
      if (!reply(out_fd, error_result("malformed request: " + request.message()))) return 4;
      continue;
    }
    // One request served in this process; `forked`: in a child forked for it, which ends with it.
    auto serve = [&](bool forked, bool& leave) {
      crucible::bench_result result;
      if (request->target == "cuda") {
#ifdef CRUCIBLE_WITH_CUDA
        if (!gpu) bind();
        if (forked) gpu->set_single_use();
        result = gpu->evaluate(*request, evaluator.worker_id());
        if (bind_ms >= 0)
          result.notes.push_back("worker: the device bound at this request in " + fmt_ms(bind_ms) + " (" +
                                 bind_parts + ")");
        bind_ms = -1;
        leave = gpu->must_exit();
        result.worker_retired = leave;
#else
        (void)forked;
        result = error_result(
            "target cuda: this worker was built without CUDA (configure with -DCRUCIBLE_CUDA=ON)");
        result.candidate_id = request->candidate_id;
        result.task = request->task.name;
#endif
      } else if (request->target == "cpu" || request->target.empty()) {
        result = evaluator.evaluate(*request);
      } else {
        result = error_result("unknown target '" + request->target + "' (expected cpu or cuda)");
      }
      return result;
    };
    crucible::bench_result result;
    bool leave = false;
    bool fork_this = fork_modules && !request->task.module.empty();
#ifdef CRUCIBLE_WITH_CUDA
    fork_this = fork_this && !gpu;  // a device bound here (a C-ABI request came first) is not forkable
#endif
    if (fork_this) {
      crucible::kernels::fork_hooks hooks;
#ifdef CRUCIBLE_WITH_PYTHON
      hooks = {crucible::kernels::python_before_fork, crucible::kernels::python_after_fork_in_parent,
               crucible::kernels::python_after_fork_in_child};
#endif
      auto forked = crucible::kernels::evaluate_forked(
          [&] {
            bool child_leaves = false;
            return serve(true, child_leaves);
          },
          {in_fd, out_fd}, hooks);
      result = std::move(forked.result);
      // The child's state (a lost context, leaked memory) ended with it; this process is as it was, unless
      // what the evaluation started could not be ended.
      leave = forked.left_running;
      result.worker_retired = leave;
    } else {
      result = serve(false, leave);
    }
    std::fflush(nullptr);  // candidate output lands in the log before the next request's
    if (!reply(out_fd, result)) return 4;
    // A lost CUDA context (or a kernel that never ends) cannot be recovered in this process.
    if (leave) std::_Exit(5);
  }
}
