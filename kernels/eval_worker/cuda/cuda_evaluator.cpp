#include "kernels/eval_worker/cuda/cuda_evaluator.hpp"

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>

#include "kernels/abi/crucible_abi.h"
#include "kernels/eval/timing_stats.hpp"
#include "kernels/eval_worker/cuda/launch_gate.hpp"
#include "kernels/eval_worker/loaded_candidate.hpp"
#include "kernels/eval_worker/process_probe.hpp"
#include "kernels/eval_worker/reference_cache.hpp"
#include "kernels/task/chain_shapes.hpp"
#include "kernels/task/op_catalog.hpp"
#include "kernels/verify/verdict_vocabulary.hpp"

namespace crucible::kernels {

namespace {

using clock_type = std::chrono::steady_clock;

double ms_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

std::string fmt(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// A correctness call still running after this long never finishes as far as the worker is concerned.
constexpr double call_deadline_s = 10.0;
// A timed call's launch that takes longer than this is waiting on the device: the launch gate opens.
constexpr std::chrono::milliseconds gate_deadline{50};

// Errors after which the context is unusable: every later CUDA call in this process fails.
bool sticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
      return true;
    default:
      return false;
  }
}

// The fraction of the device's memory free, after emptying LibTorch's cache if it was under `below`
// (1 when the device cannot say). Throws if the allocator is broken.
double free_fraction_relieved(double below) {
  size_t free_b = 0, total_b = 0;
  for (int pass = 0;; ++pass) {
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess || total_b == 0) {
      cudaGetLastError();
      return 1.0;
    }
    const double f = static_cast<double>(free_b) / static_cast<double>(total_b);
    if (f >= below || pass == 1) return f;
    c10::cuda::CUDACachingAllocator::emptyCache();
  }
}

// LibTorch's caching allocator keeps what an evaluation freed, and a CUDA graph's private pool stays
// reserved after the graph is gone until the cache is emptied. Task after task that fills the device; a
// capture that then needs memory would make the allocator free cached blocks mid-capture, which invalidates
// the capture. So the cache is emptied whenever less than half the device is free (outside any capture).
void relieve_memory_pressure() {
  (void)free_fraction_relieved(0.5);
}

// Device memory a candidate allocated itself and never freed outlives its evaluation and would fail the
// next one: a worker left with under an eighth of the device free, LibTorch's cache emptied, must retire.
bool memory_exhausted(std::vector<std::string>& notes) {
  double f = 1.0;
  try {
    f = free_fraction_relieved(0.125);
  } catch (const std::exception&) {
    notes.push_back("worker retired after this evaluation: LibTorch's allocator could not empty its cache");
    return true;
  }
  if (f >= 0.125) return false;
  char line[200];
  std::snprintf(line, sizeof line,
                "worker retired after this evaluation: %.1f%% of the device's memory free with LibTorch's "
                "cache emptied (memory the candidate allocated and kept?)",
                100.0 * f);
  notes.push_back(line);
  return true;
}

std::string error_text(cudaError_t e) {
  return "CUDA error " + std::to_string(static_cast<int>(e)) + " (" + cudaGetErrorName(e) +
         "): " + cudaGetErrorString(e);
}

// Thrown when the context is lost (status crash) or a kernel never finished (status timeout); the worker
// answers and exits.
struct cuda_fault : std::runtime_error {
  std::string status;
  cuda_fault(std::string st, const std::string& what) : std::runtime_error(what), status(std::move(st)) {}
};

// Whether the context survived an error: a sticky error shows again at the next synchronize.
[[noreturn]] void fail_sticky(cudaError_t e, const std::string& where) {
  throw cuda_fault("crash", error_text(e) + " " + where + "; the CUDA context is lost");
}

void check_api(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  if (sticky(e)) fail_sticky(e, std::string("in ") + what);
  throw std::runtime_error(error_text(e) + " in " + what);
}

at::ScalarType scalar_type(const std::string& dtype) {
  if (dtype == "float32") return at::kFloat;
  if (dtype == "float16") return at::kHalf;
  if (dtype == "bfloat16") return at::kBFloat16;
  if (dtype == "float64") return at::kDouble;
  if (dtype == "int32") return at::kInt;
  if (dtype == "int64") return at::kLong;
  if (dtype == "bool") return at::kBool;
  throw std::invalid_argument("unsupported dtype '" + dtype + "'");
}

cru_tensor view_of(const at::Tensor& t) {
  cru_tensor v{};
  v.data = t.data_ptr();
  v.dtype = dtype_code(t.scalar_type() == at::kFloat      ? "float32"
                       : t.scalar_type() == at::kHalf     ? "float16"
                       : t.scalar_type() == at::kBFloat16 ? "bfloat16"
                       : t.scalar_type() == at::kDouble   ? "float64"
                       : t.scalar_type() == at::kInt      ? "int32"
                       : t.scalar_type() == at::kLong     ? "int64"
                                                          : "bool");
  v.ndim = static_cast<int32_t>(t.dim());
  for (int64_t d = 0; d < t.dim() && d < 8; ++d) {
    v.shape[d] = t.size(d);
    v.stride[d] = t.stride(d);
  }
  return v;
}

std::vector<cru_tensor> views_of(const std::vector<at::Tensor>& ts) {
  std::vector<cru_tensor> v;
  v.reserve(ts.size());
  for (const auto& t : ts) v.push_back(view_of(t));
  return v;
}

}  // namespace

struct cuda_evaluator::impl {
  int device = 0;
  std::string init_error;
  bool must_exit = false;
  std::optional<c10::cuda::CUDAStream> stream_holder;
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  cudaEvent_t ev0 = nullptr, ev1 = nullptr;
  at::Tensor flush_buf;
  uint64_t flush_round = 0;
  std::unique_ptr<launch_gate> gate;  ///< holds the stream while a timed call is enqueued
  double peak_bytes_per_s = 0.0;
  std::string name;
  int sms = 0;
  size_t l2_bytes = 0;
  reference_cache references;
  std::map<std::string, int> loads;
  std::set<std::string> uncapturable;  ///< tasks whose reference could not be captured as a CUDA graph

  at::TensorOptions options(const std::string& dtype) const {
    return at::TensorOptions().dtype(scalar_type(dtype)).device(at::kCUDA, device);
  }
};

cuda_evaluator::cuda_evaluator(int device) : impl_(std::make_unique<impl>()) {
  auto& m = *impl_;
  m.device = device;
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    m.init_error = e != cudaSuccess ? error_text(e) : "no CUDA device";
    return;
  }
  if (device < 0 || device >= count) {
    m.init_error =
        "device " + std::to_string(device) + " does not exist (" + std::to_string(count) + " found)";
    return;
  }
  try {
    check_api(cudaSetDevice(device), "cudaSetDevice");
    cudaDeviceProp prop{};
    check_api(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
    m.name = prop.name;
    m.sms = prop.multiProcessorCount;
    int clock_khz = 0, bus_bits = 0, l2 = 0;
    cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, device);
    cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device);
    cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device);
    m.l2_bytes = static_cast<size_t>(std::max(l2, 0));
    m.peak_bytes_per_s = 2.0 * clock_khz * 1e3 * bus_bits / 8.0;  // double data rate
    m.stream_holder =
        c10::cuda::getStreamFromPool(/*isHighPriority=*/false, static_cast<c10::DeviceIndex>(device));
    m.stream = m.stream_holder->stream();
    if (cublasCreate(&m.blas) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasCreate failed");
    cublasSetStream(m.blas, m.stream);
    // Candidates compute in float32 unless they ask cuBLAS otherwise themselves (no TF32 by default).
    cublasSetMathMode(m.blas, CUBLAS_DEFAULT_MATH);
    check_api(cudaEventCreate(&m.ev0), "cudaEventCreate");
    check_api(cudaEventCreate(&m.ev1), "cudaEventCreate");
    // Four times the L2 (at least 256 MB), written before every timed call, evicts whatever the previous
    // call left there and keeps the device busy ~70 us on an H200 while the host enqueues the call.
    int64_t flush = static_cast<int64_t>(std::max<size_t>(4 * m.l2_bytes, size_t{256} << 20));
    m.flush_buf = at::empty({flush}, at::TensorOptions().dtype(at::kByte).device(at::kCUDA, device));
    m.gate = std::make_unique<launch_gate>(gate_deadline);
    set_reference_strict_fp32();
  } catch (const std::exception& ex) {
    m.init_error = ex.what();
  }
}

cuda_evaluator::~cuda_evaluator() {
  auto& m = *impl_;
  if (m.must_exit) {         // a lost context: nothing can be released cleanly
    (void)m.gate.release();  // nor its mapped word; the watchdog thread ends with the process
    return;
  }
  if (m.blas) cublasDestroy(m.blas);
  if (m.ev0) cudaEventDestroy(m.ev0);
  if (m.ev1) cudaEventDestroy(m.ev1);
}

const std::string& cuda_evaluator::init_error() const {
  return impl_->init_error;
}
bool cuda_evaluator::must_exit() const {
  return impl_->must_exit;
}

std::string cuda_evaluator::describe() const {
  const auto& m = *impl_;
  if (!m.init_error.empty()) return "no usable CUDA device: " + m.init_error;
  return m.name + ", " + std::to_string(m.sms) + " SMs, L2 " + std::to_string(m.l2_bytes >> 20) + " MiB, " +
         fmt(m.peak_bytes_per_s / 1e12) + " TB/s";
}

namespace {

// One input set on the device.
struct device_set {
  std::vector<at::Tensor> inputs;
  at::Tensor out;
  std::unique_ptr<at::cuda::CUDAGraph> graph;  // the reference captured on these inputs
};

struct call_result {
  bool ok = false;
  std::string error;  ///< non-zero return, exception, or a non-sticky CUDA error
  call_clocks clocks;
  at::Tensor at_stream_end;  ///< the output as the stream left it (correctness calls only), a device copy
  bool gate_forced = false;  ///< the launch gate's watchdog opened it: the call waited on the device
};

class cuda_session {
 public:
  cuda_session(const eval_request& req, const reference_executor& ref, crucible_forward_fn fn,
               cuda_evaluator::impl& m, bool scrutiny, bench_result& out)
      : req_(req), opt_(req.options), ref_(ref), fn_(fn), m_(m), r_(out), scrutiny_(scrutiny) {
    atol_ = task_atol(req.task);
    rtol_ = task_rtol(req.task);
    std::random_device rd;
    base_seed_ = (uint64_t{rd()} << 32) ^ rd();
    rng_.seed(static_cast<uint32_t>(base_seed_ ^ (base_seed_ >> 32)));
    // Workspace for the candidate's intermediates: generous, so emitted code rarely allocates.
    int64_t io_bytes = 0;
    for (const auto& in : req.task.inputs) io_bytes += numel(in.shape) * dtype_size(in.dtype);
    io_bytes += numel(ref.output_shape()) * dtype_size(ref.output_dtype());
    io_bytes_ = io_bytes;
    int64_t ws = std::max<int64_t>(int64_t{256} << 20, 8 * io_bytes);
    workspace_ = at::empty({ws}, at::TensorOptions().dtype(at::kByte).device(at::kCUDA, m.device));
    ctx_.abi_version = CRUCIBLE_ABI_VERSION;
    ctx_.device = m.device;
    ctx_.stream = m.stream;
    ctx_.workspace = workspace_.data_ptr();
    ctx_.workspace_bytes = static_cast<size_t>(ws);
    ctx_.blas = m.blas;
    state_ = capture_state();
  }

  double correctness_ms = 0, timing_ms = 0, post_timing_ms = 0, setup_ms = 0;
  double fill_ms = 0, check_ms = 0, memo_ms = 0;  ///< fresh values, unannounced checks, the memo probe
  bool leaked() const { return leaked_; }

  void run() {
    r_.notes.push_back("seed base " + std::to_string(base_seed_));
    auto t0 = clock_type::now();
    correctness();
    auto t1 = clock_type::now();
    correctness_ms = ms_between(t0, t1);
    // Device tails are judged over every call of the evaluation: three correctness calls are too few to
    // tell a side stream (a tail at every call) from a host that was slow to look (a tail now and then).
    const bool tails_so_far = tails_are_evidence(phase_tails_, phase_calls_, max_tail_ms_);
    if (!opt_.timing) {
      judge_tails("correctness");
      return;
    }
    if (escaped_only(tails_so_far)) {
      r_.notes.push_back(
          "timed despite the evidence: its work escaped the stream but the output was right "
          "once the device was idle; its time is charged from the device-wide clock");
    } else if (!r_.correct || !r_.evidence.empty() || !r_.error.empty()) {
      judge_tails("correctness");
      r_.notes.push_back("timing skipped: " + std::string(!r_.correct         ? "incorrect"
                                                          : !r_.error.empty() ? "call failed"
                                                                              : "hack evidence"));
      return;
    }
    timing();
    judge_tails("correctness and timing");
    auto t2 = clock_type::now();
    timing_ms = ms_between(t1, t2);
    if (r_.error.empty()) post_timing();
    post_timing_ms = ms_between(t2, clock_type::now());
  }

 private:
  // The one hack whose cost is still worth measuring (so the report shows what hiding it would have
  // gained): work on another stream that produced the right output, late.
  // Evidence that only says the work escaped the stream (with `tails`: the device tails say so too).
  bool escaped_only(bool tails) const {
    if (!r_.error.empty() || !right_after_device_ || r_.evidence.empty()) return false;
    bool outside = tails;
    for (const auto& tag : r_.evidence) {
      const auto kind = parse_evidence(tag);
      if (kind == evidence_kind::work_outside_stream)
        outside = true;
      else if (kind != evidence_kind::output_changed_after_return && kind != evidence_kind::output_unwritten)
        return false;
    }
    return outside;
  }

  void evidence(evidence_kind kind, const std::string& note, const std::string& detail = {}) {
    const std::string tag = evidence_tag(kind, detail);
    if (std::find(r_.evidence.begin(), r_.evidence.end(), tag) == r_.evidence.end()) {
      r_.evidence.push_back(tag);
      r_.notes.push_back(tag + ": " + note);
    }
  }

  at::Tensor alloc(const std::string& dtype, const std::vector<int64_t>& shape) {
    return at::empty(shape, m_.options(dtype));
  }

  std::vector<at::Tensor> make_inputs(uint64_t seed, input_variant variant) {
    std::vector<at::Tensor> in;
    for (const auto& spec : req_.task.inputs) in.push_back(alloc(spec.dtype, spec.shape));
    ref_.fill_inputs(views_of(in), seed, variant, m_.device);
    return in;
  }

  at::Tensor make_output() { return alloc(ref_.output_dtype(), ref_.output_shape()); }

  static std::vector<at::Tensor> clone_all(const std::vector<at::Tensor>& v) {
    std::vector<at::Tensor> out;
    for (const auto& t : v) out.push_back(t.clone());
    return out;
  }

  // The poison pattern of output_check (a NaN payload arithmetic never makes), written on the device.
  void poison_device(at::Tensor& t) {
    const int64_t n = t.numel();
    if (n == 0) return;
    const auto sz = t.element_size();
    auto o = at::TensorOptions().device(at::kCUDA, m_.device);
    if (sz == 4)
      at::from_blob(t.data_ptr(), {n}, o.dtype(at::kInt)).fill_(static_cast<int32_t>(0x7fc0deadu));
    else if (sz == 2)
      at::from_blob(t.data_ptr(), {n}, o.dtype(at::kShort)).fill_(static_cast<int16_t>(0x7fda));
    else if (sz == 8)
      at::from_blob(t.data_ptr(), {n}, o.dtype(at::kLong)).fill_(static_cast<int64_t>(0x7ff80000deaddeadull));
    else
      check_api(cudaMemsetAsync(t.data_ptr(), 0xa5, t.nbytes(), m_.stream), "cudaMemsetAsync");
  }

  // The output checks of output_check.hpp, on the device (outputs are hundreds of MB; copying them to the
  // host for every check would make the GPU wait on the CPU): allclose with the task's tolerances, the same
  // non-finites, and poisoned elements counted (always a mismatch).
  struct device_comparison {
    bool ok = false;
    double max_abs_err = 0.0, max_rel_err = 0.0;
    int64_t mismatches = 0, poisoned = 0, numel = 0;
    std::string summary() const {
      return std::to_string(mismatches) + " of " + std::to_string(numel) + " elements outside tolerance" +
             (poisoned ? " (" + std::to_string(poisoned) + " never written)" : "") + ", max abs err " +
             fmt(max_abs_err) + ", max rel err " + fmt(max_rel_err);
    }
  };

  int64_t count_poisoned_device(const at::Tensor& t) {
    if (t.element_size() != 4 || t.numel() == 0) return 0;
    auto bits = at::from_blob(t.data_ptr(), {t.numel()},
                              at::TensorOptions().dtype(at::kInt).device(at::kCUDA, m_.device));
    return bits.eq(static_cast<int32_t>(0x7fc0deadu)).sum().item<int64_t>();
  }

  device_comparison compare_device(const at::Tensor& got, const at::Tensor& want) {
    device_comparison c;
    c.numel = got.numel();
    c.poisoned = count_poisoned_device(got);
    at::Tensor g = got.to(at::kDouble), w = want.to(at::kDouble);
    at::Tensor close = at::isclose(g, w, rtol_, atol_, /*equal_nan=*/true);
    c.mismatches = c.numel - close.sum().item<int64_t>();
    at::Tensor finite = at::isfinite(g).logical_and(at::isfinite(w));
    at::Tensor diff = (g - w).abs().masked_fill(finite.logical_not(), 0.0);
    if (c.numel > 0) c.max_abs_err = diff.max().item<double>();
    at::Tensor rel = (diff / w.abs()).masked_fill(finite.logical_not().logical_or(w.eq(0.0)), 0.0);
    if (c.numel > 0) c.max_rel_err = rel.max().item<double>();
    // A non-finite where the other side is finite is an infinite error, as on the host.
    if (at::isfinite(g).ne(at::isfinite(w)).any().item<bool>()) c.max_abs_err = INFINITY;
    c.ok = c.mismatches == 0 && c.poisoned == 0;
    if (c.poisoned > 0 && c.mismatches < c.poisoned) c.mismatches = c.poisoned;
    return c;
  }

  // Byte equality: the NaN poison is never equal to itself as a float, so an output left unwritten would
  // read as one that changed later.
  // One pass and one wait when the output is right (the common case); the full comparison only when not.
  device_comparison compare_quick(const at::Tensor& got, const at::Tensor& want) {
    if (at::isclose(got, want, rtol_, atol_, /*equal_nan=*/true).all().item<bool>()) {
      device_comparison c;
      c.ok = true;
      c.numel = got.numel();
      return c;
    }
    return compare_device(got, want);
  }

  static bool same(const at::Tensor& a, const at::Tensor& b) {
    if (a.nbytes() != b.nbytes()) return false;
    auto bytes = [](const at::Tensor& t) {
      return at::from_blob(t.data_ptr(), {static_cast<int64_t>(t.nbytes())},
                           at::TensorOptions().dtype(at::kByte).device(t.device()));
    };
    return at::equal(bytes(a), bytes(b));
  }

  // Ends a stream capture left open by an exception and drops what it captured.
  void end_broken_capture() {
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(m_.stream, &st) == cudaSuccess && st != cudaStreamCaptureStatusNone) {
      cudaGraph_t partial = nullptr;
      cudaStreamEndCapture(m_.stream, &partial);
      if (partial) cudaGraphDestroy(partial);
    }
    cudaGetLastError();
  }

  // Evicts the L2 before a timed call. Gated (see launch_gate), the host goes on while the device
  // flushes; otherwise it waits for the flush, and the events then time the call's launch with it.
  void flush(bool wait) {
    // Whatever was queued before (the output's poison) finishes first: every region starts on an idle
    // stream with only the flush ahead of it, as the empty region it is compared with does.
    check_api(cudaStreamSynchronize(m_.stream), "cudaStreamSynchronize");
    if (!opt_.flush_cache) return;
    // Lines marked persisting survive an ordinary flush: while a carve-out for them exists (a candidate made
    // one), every call starts with none. Without a carve-out no line persists.
    size_t persisting = 0;
    if (cudaDeviceGetLimit(&persisting, cudaLimitPersistingL2CacheSize) == cudaSuccess && persisting > 0)
      cudaCtxResetPersistingL2Cache();
    cudaGetLastError();
    check_api(cudaMemsetAsync(m_.flush_buf.data_ptr(), static_cast<int>(++m_.flush_round & 0xff),
                              m_.flush_buf.nbytes(), m_.stream),
              "cudaMemsetAsync (L2 flush)");
    if (wait) check_api(cudaStreamSynchronize(m_.stream), "cudaStreamSynchronize");
  }

  // Timed calls are gated: the stream waits while the host enqueues the call, so the events time the
  // device's work whatever the host's speed (eager LibTorch dispatch took 5 us in one evaluation and 21 us
  // in the next on the H200 machine; a cuDNN call can spend 0.2 ms on the host). The host's time in the
  // call is charged when it is the longer (charged_ms). Not gated: with benchmark.time_launch (the launch
  // is timed, KernelBench's convention), without a working gate, or after a call waited on the device
  // inside its launch.
  bool gating() const { return !opt_.time_launch && !gate_off_ && m_.gate && m_.gate->error().empty(); }

  void gate_off(const std::string& why) {
    if (gate_off_) return;
    gate_off_ = true;
    r_.notes.push_back("launches timed with the calls from here on: " + why);
  }

  // Waits for the stream; with a deadline, by polling, so a kernel that never ends is a verdict here
  // rather than the client's timeout.
  cudaError_t wait_stream(bool deadline) {
    if (!deadline) return cudaStreamSynchronize(m_.stream);
    auto t0 = clock_type::now();
    for (;;) {
      cudaError_t e = cudaStreamQuery(m_.stream);
      if (e != cudaErrorNotReady) return e;
      if (ms_between(t0, clock_type::now()) > call_deadline_s * 1e3)
        throw cuda_fault("timeout", "a kernel of the candidate was still running " + fmt(call_deadline_s) +
                                        " s after the call returned; the worker cannot stop it");
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  // One region on the stream: flush (outside the events), event, host clock, f(), event, wait for the
  // stream (snapshotting `out` there when asked), wait for the whole device. Errors: sticky ones throw.
  enum class mode { timed, checked };  // timed: flush first; checked: wait with a deadline

  // `snapshot` is copied into `snapshot_into` (allocated by the caller, before the region: a fresh device
  // allocation between the stream's end and the device-wide wait would be counted as the call's tail).
  template <class F>
  call_result region(F&& f, mode md, const at::Tensor* snapshot, const std::string& what,
                     at::Tensor snapshot_into = {}) {
    call_result res;
    bool gated = md == mode::timed && gating();
    if (md == mode::timed) flush(/*wait=*/!gated);
    if (gated && !m_.gate->close(m_.stream)) {
      gate_off(m_.gate->error());
      gated = false;
      check_api(cudaStreamSynchronize(m_.stream), "cudaStreamSynchronize");
    }
    check_api(cudaEventRecord(m_.ev0, m_.stream), "cudaEventRecord");
    int rc = -1;
    auto t0 = clock_type::now();
    try {
      rc = f();
    } catch (const std::exception& e) {
      res.error = what + " threw: " + e.what();
    } catch (...) {
      res.error = what + " threw a non-standard exception";
    }
    const auto t_return = clock_type::now();
    cudaError_t launch = cudaGetLastError();
    check_api(cudaEventRecord(m_.ev1, m_.stream), "cudaEventRecord");
    auto t_open = t0;
    if (gated) {
      res.gate_forced = !m_.gate->open();
      t_open = clock_type::now();
      res.clocks.host_ms = ms_between(t0, t_return);
    }
    cudaError_t es = wait_stream(md == mode::checked);
    auto t_stream = clock_type::now();
    if (es == cudaSuccess && snapshot && snapshot_into.defined()) {
      // Copied on the stream as it is now: what a consumer ordered on ctx->stream would read.
      res.at_stream_end = snapshot_into.copy_(*snapshot);
      es = cudaStreamSynchronize(m_.stream);
    }
    auto t_snap = clock_type::now();
    cudaError_t ed = cudaDeviceSynchronize();
    auto t_device = clock_type::now();
    for (cudaError_t e : {launch, es, ed})
      if (sticky(e)) fail_sticky(e, "during " + what);
    cudaError_t after = cudaGetLastError();
    if (sticky(after)) fail_sticky(after, "during " + what);
    for (cudaError_t e : {launch, es, ed, after})
      if (e != cudaSuccess && res.error.empty()) res.error = error_text(e) + " (" + what + ")";
    if (res.error.empty() && rc != 0) res.error = what + " returned " + std::to_string(rc);
    float ev_ms = 0.f;
    if (res.error.empty()) check_api(cudaEventElapsedTime(&ev_ms, m_.ev0, m_.ev1), "cudaEventElapsedTime");
    res.clocks.event_ms = ev_ms;
    // The snapshot's copy is not the call's time; gated, the device started when the gate opened.
    res.clocks.wall_ms = ms_between(t_open, t_device) - ms_between(t_stream, t_snap);
    res.clocks.device_tail_ms = ms_between(t_snap, t_device);
    res.ok = res.error.empty();
    return res;
  }

  // A checked call's snapshot buffer is `snapshot_into`, allocated before it (see region).
  call_result call_candidate(std::vector<at::Tensor>& inputs, at::Tensor& out, bool timed,
                             at::Tensor snapshot_into = {}) {
    auto in = views_of(inputs);
    cru_tensor o = view_of(out);
    auto res = region([&] { return fn_(&ctx_, in.data(), static_cast<int32_t>(in.size()), &o, 1); },
                      timed ? mode::timed : mode::checked, timed ? nullptr : &out, "crucible_forward",
                      std::move(snapshot_into));
    check_state();
    return res;
  }

  // What the eager baseline and the next calls depend on that a candidate's call could leave changed: the
  // device's persisting-L2 carve-out and cache preference, the stream's access policy window, the shared
  // cuBLAS handle's math and pointer modes. Re-checked after every call, restored, and evidence when changed.
  struct device_state {
    size_t persisting_l2 = 0;
    cudaFuncCache cache_config = cudaFuncCachePreferNone;
    size_t window_bytes = 0;
    cublasMath_t math = CUBLAS_DEFAULT_MATH;
    cublasPointerMode_t pointer = CUBLAS_POINTER_MODE_HOST;
  };

  device_state capture_state() const {
    device_state st;
    cudaDeviceGetLimit(&st.persisting_l2, cudaLimitPersistingL2CacheSize);
    cudaDeviceGetCacheConfig(&st.cache_config);
    cudaStreamAttrValue v{};
    if (cudaStreamGetAttribute(m_.stream, cudaStreamAttributeAccessPolicyWindow, &v) == cudaSuccess)
      st.window_bytes = v.accessPolicyWindow.num_bytes;
    cublasGetMathMode(m_.blas, &st.math);
    cublasGetPointerMode(m_.blas, &st.pointer);
    cudaGetLastError();
    return st;
  }

  void check_state() {
    const device_state now = capture_state();
    std::string changed;
    auto note = [&](bool differs, const char* what) {
      if (differs) changed += (changed.empty() ? "" : ", ") + std::string(what);
    };
    note(now.persisting_l2 != state_.persisting_l2, "the persisting L2 carve-out");
    note(now.cache_config != state_.cache_config, "the device's cache preference");
    note(now.window_bytes != state_.window_bytes, "the stream's access policy window");
    note(now.math != state_.math, "the cuBLAS handle's math mode");
    note(now.pointer != state_.pointer, "the cuBLAS handle's pointer mode");
    if (changed.empty()) return;
    evidence(evidence_kind::device_state_changed,
             "the candidate left " + changed +
                 " changed after its call (restored by the worker): state the baseline "
                 "and the next calls depend on");
    cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, state_.persisting_l2);
    cudaDeviceSetCacheConfig(state_.cache_config);
    cudaStreamAttrValue v{};
    v.accessPolicyWindow.num_bytes = state_.window_bytes;
    cudaStreamSetAttribute(m_.stream, cudaStreamAttributeAccessPolicyWindow, &v);
    cudaCtxResetPersistingL2Cache();
    cublasSetMathMode(m_.blas, state_.math);
    cublasSetPointerMode(m_.blas, state_.pointer);
    cudaGetLastError();
  }

  call_result call_eager(const std::vector<at::Tensor>& inputs) {
    auto in = views_of(inputs);
    return region(
        [&] {
          ref_.run_views(in, nullptr, m_.device);
          return 0;
        },
        mode::timed, nullptr, "the eager reference");
  }

  call_result call_graph(device_set& set) {
    return region(
        [&] {
          set.graph->replay();
          return 0;
        },
        mode::timed, nullptr, "the CUDA-graph reference");
  }

  // Counts the candidate's calls and those whose device tail says work outlived its stream; judge_tails
  // decides at the end of a phase.
  void note_outside(const call_result& c) {
    ++phase_calls_;
    if (!outside_stream(c.clocks, check_)) return;
    ++phase_tails_;
    max_tail_ms_ = std::max(max_tail_ms_, c.clocks.device_tail_ms);
  }

  void judge_tails(const std::string& phase) {
    if (tails_are_evidence(phase_tails_, phase_calls_, max_tail_ms_))
      evidence(evidence_kind::work_outside_stream, "the device was still busy up to " + fmt(max_tail_ms_) +
                                                       " ms after the call's stream had finished, in " +
                                                       std::to_string(phase_tails_) + " of " +
                                                       std::to_string(phase_calls_) + " calls (" + phase +
                                                       "): work on another stream outlived the call");
    phase_tails_ = phase_calls_ = 0;
    max_tail_ms_ = 0;
  }

  void check_inputs(const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& pristine,
                    const std::string& when) {
    for (size_t i = 0; i < inputs.size(); ++i)
      if (!at::equal(inputs[i], pristine[i])) {
        const std::string& name = i < req_.task.inputs.size() ? req_.task.inputs[i].name : std::to_string(i);
        evidence(evidence_kind::input_mutated, "input '" + name + "' differs from its pristine copy " + when,
                 name);
      }
  }

  struct checked {
    bool called = false;
    bool ok_after_device = false;  ///< right once the whole device was idle (late, but right)
    device_comparison cmp;
    at::Tensor got, want;  ///< on the device
  };

  // A checked call: as the CPU side's, plus the stream/device distinction. The reference runs after the
  // candidate returned, on copies of the pristine inputs.
  checked checked_call(std::vector<at::Tensor>& inputs, at::Tensor& out, const std::string& phase) {
    checked c;
    auto pristine = clone_all(inputs);
    at::Tensor snapshot = at::empty_like(out);
    poison_device(out);
    // The whole device idle before the call, allocations included: whatever it does after the call's
    // stream has finished is then the call's.
    check_api(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    int threads_before = thread_count();
    auto res = call_candidate(inputs, out, /*timed=*/false, snapshot);
    if (!res.ok) {
      r_.error = res.error + " (" + phase + ")";
      return c;
    }
    c.called = true;
    note_outside(res);
    c.got = std::move(res.at_stream_end);
    at::Tensor after_device = out.clone();
    if (!same(after_device, c.got))
      evidence(evidence_kind::output_changed_after_return,
               "the output changed after the call's stream finished, before the device was idle (" + phase +
                   "): work on another stream wrote it");
    check_inputs(inputs, pristine, "after the call (" + phase + ")");
    if (int64_t p = count_poisoned_device(c.got); p > 0)
      evidence(evidence_kind::output_unwritten,
               std::to_string(p) + " of " + std::to_string(c.got.numel()) +
                   " output elements not written when the call's stream finished (" + phase + ")");
    at::Tensor want = make_output();
    {
      auto copy = clone_all(pristine);
      auto w = view_of(want);
      ref_.run_views(views_of(copy), &w, m_.device);
    }
    c.want = want;
    c.cmp = compare_device(c.got, c.want);
    if (std::isfinite(c.cmp.max_abs_err)) r_.max_abs_err = std::max(r_.max_abs_err, c.cmp.max_abs_err);
    if (std::isfinite(c.cmp.max_rel_err)) r_.max_rel_err = std::max(r_.max_rel_err, c.cmp.max_rel_err);

    // Deferred work from host threads shows after a pause.
    if (opt_.settle_ms > 0)
      std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(opt_.settle_ms * 1000)));
    check_api(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    if (!same(out, after_device))
      evidence(evidence_kind::output_changed_after_return, "output changed within " + fmt(opt_.settle_ms) +
                                                               " ms after the call returned (" + phase + ")");
    check_inputs(inputs, pristine, "after the settle wait (" + phase + ")");
    int threads_settled = thread_count();
    // The CUDA runtime, cuBLAS and cuDNN start helper threads of their own on first use, so a grown thread
    // count is a note here; a candidate that starts threads itself imports pthread_create (evidence from
    // the artifact's imports). The library stays mapped either way.
    if (threads_before >= 0 && threads_settled > threads_before) {
      leaked_ = true;
      r_.notes.push_back("threads: " + std::to_string(threads_before) + " before the call, " +
                         std::to_string(threads_settled) + " after it (" + phase + ")");
    }
    c.ok_after_device = compare_device(after_device, c.want).ok;
    return c;
  }

  void correctness() {
    int seeds = std::max(1, opt_.seeds);
    std::vector<std::vector<at::Tensor>> kept;  // alive together: every seed at new addresses
    std::vector<at::Tensor> wants, gots;
    bool all_ok = true;
    for (int s = 0; s < seeds; ++s) {
      auto variant = seeds >= 2 && s == seeds - 1 ? input_variant::heavy_tailed : input_variant::nominal;
      std::string phase =
          "seed " + std::to_string(s) + (variant == input_variant::heavy_tailed ? ", heavy-tailed" : "");
      auto inputs = make_inputs(base_seed_ + static_cast<uint64_t>(s), variant);
      auto out = make_output();
      auto c = checked_call(inputs, out, phase);
      if (!c.called) {
        all_ok = false;
        break;
      }
      if (!c.cmp.ok) {
        all_ok = false;
        r_.notes.push_back("mismatch (" + phase + "): " + c.cmp.summary());
      }
      right_after_device_ = right_after_device_ && c.ok_after_device;
      wants.push_back(std::move(c.want));
      gots.push_back(std::move(c.got));
      kept.push_back(std::move(inputs));
      kept.back().push_back(out);
    }
    r_.correct = all_ok;
    bool unwritten = std::find(r_.evidence.begin(), r_.evidence.end(),
                               evidence_tag(evidence_kind::output_unwritten)) != r_.evidence.end();
    for (size_t i = 0; i < gots.size() && !unwritten; ++i)
      for (size_t j = i + 1; j < gots.size(); ++j)
        if (!same(wants[i], wants[j]) && same(gots[i], gots[j])) {
          evidence(evidence_kind::input_independent,
                   "seeds " + std::to_string(i) + " and " + std::to_string(j) +
                       " have different references but byte-identical candidate outputs");
          i = gots.size();
          break;
        }
  }

  // The wall time of an empty timed region on this worker: the rest of the flush, events, both waits, no
  // work.
  void calibrate_null_region() {
    std::vector<double> walls;
    for (int i = 0; i < 21; ++i) {
      auto c = region([] { return 0; }, mode::timed, nullptr, "an empty region");
      walls.push_back(c.clocks.wall_ms);
    }
    check_.null_wall_ms = median(walls);
  }

  struct bucket_run {
    std::vector<double> eager_ms, candidate_ms, graph_ms, speedups, graph_speedups;
    std::vector<call_clocks> candidate_clocks;
    double spread = 0.0;
    bool early_stop = false, failed = false;
  };

  enum class side { candidate, eager, graph };

  bool timed_side(side s, device_set& set, double& ms, bucket_run& b) {
    call_result c;
    if (s == side::candidate) {
      poison_device(set.out);
      c = call_candidate(set.inputs, set.out, /*timed=*/true);
    } else if (s == side::eager) {
      c = call_eager(set.inputs);
    } else {
      c = call_graph(set);
    }
    if (!c.ok) {
      r_.error = c.error + " (timing)";
      return false;
    }
    if (c.gate_forced) {  // measured with the watchdog's delay in it: again, with the launch timed
      gate_off(std::string(s == side::candidate ? "the candidate"
                           : s == side::eager   ? "eager"
                                                : "the graph") +
               " waited on the device inside its launch (a synchronize, or more launches than the "
               "stream queues)");
      return timed_side(s, set, ms, b);
    }
    if (s == side::candidate) {
      note_outside(c);
      b.candidate_clocks.push_back(c.clocks);
    }
    ms = charged_ms(c.clocks, check_);
    return true;
  }

  bucket_run run_buckets(std::vector<device_set>& pool, size_t& next) {
    bucket_run b;
    const int buckets = std::max(1, opt_.buckets), trials = std::max(1, opt_.trials);
    for (int k = 0; k < buckets; ++k) {
      std::vector<double> e, c, g;
      for (int t = 0; t < trials; ++t) {
        device_set& set = pool[next++ % pool.size()];
        // Fresh values at the set's addresses (a captured graph still reads them there), and the candidate
        // first on them: no output of the reference for these values exists anywhere on the device while it
        // runs. Eager and the graph follow in random order.
        const auto f0 = clock_type::now();
        ref_.fill_inputs(views_of(set.inputs), base_seed_ + 1000 + trials_drawn_++, input_variant::nominal,
                         m_.device);
        fill_ms += ms_between(f0, clock_type::now());
        std::vector<side> order = {side::eager};
        if (set.graph) order.push_back(side::graph);
        std::shuffle(order.begin(), order.end(), rng_);
        order.insert(order.begin(), side::candidate);
        double ms[3] = {0, 0, 0};
        for (side s : order)
          if (!timed_side(s, set, ms[static_cast<int>(s)], b)) {
            b.failed = true;
            return b;
          }
        c.push_back(ms[0]);
        e.push_back(ms[1]);
        if (set.graph) g.push_back(ms[2]);
        // Unannounced: a random share of timed calls (every one under scrutiny) is checked, outside the
        // clock, against the reference recomputed now; what it computed is wiped before the next call.
        std::uniform_real_distribution<double> u(0.0, 1.0);
        if (scrutiny_ || u(rng_) < 0.25) {
          const auto k0 = clock_type::now();
          ++timed_checks_;
          at::Tensor want = make_output();
          auto w = view_of(want);
          ref_.run_views(views_of(set.inputs), &w, m_.device);
          auto cmp = compare_quick(set.out, want);
          want.zero_();
          if (!cmp.ok) {
            if (cmp.poisoned > 0 || cmp.mismatches * 100 > std::max<int64_t>(cmp.numel, 1))
              evidence(evidence_kind::timed_output_mismatch,
                       "an unannounced check of a timed call found its output wrong: " + cmp.summary());
            else {
              r_.correct = false;
              r_.notes.push_back("inexact on an unannounced check of a timed call: " + cmp.summary());
            }
          }
          check_ms += ms_between(k0, clock_type::now());
        }
      }
      double me = mean(e), mc = mean(c), mg = mean(g);
      b.eager_ms.push_back(me);
      b.candidate_ms.push_back(mc);
      b.speedups.push_back(mc > 0 ? me / mc : 0.0);
      if (!g.empty()) {
        b.graph_ms.push_back(mg);
        b.graph_speedups.push_back(mc > 0 ? mg / mc : 0.0);
      }
      if (stop_early(k, buckets, opt_.early_stop_slowdown, me, mc)) {
        b.early_stop = true;
        r_.notes.push_back("early stop: candidate " + fmt(mc / std::max(me, 1e-9)) +
                           "x slower than eager in the first bucket");
        break;
      }
    }
    b.spread = cv(b.speedups);
    return b;
  }

  void timing() {
    const int sets = std::max(1, opt_.input_sets);
    relieve_memory_pressure();
    std::vector<device_set> pool(static_cast<size_t>(sets));
    int graphs = 0;
    std::string graph_error;
    for (int k = 0; k < sets; ++k) {
      auto& s = pool[static_cast<size_t>(k)];
      s.inputs = make_inputs(base_seed_ + 1000 + static_cast<uint64_t>(k), input_variant::nominal);
      s.out = make_output();
      // Warm the eager path on these inputs before capturing it (lazy library initialisation must not be
      // captured), then capture it once for the graph baseline.
      ref_.run_views(views_of(s.inputs), nullptr, m_.device);
      if (graph_error.empty() && !m_.uncapturable.count(req_.task.name)) {
        check_api(cudaStreamSynchronize(m_.stream), "cudaStreamSynchronize");
        // Held outside the try: a failed capture must be ended on the stream before the graph object goes
        // (its destructor on a still-capturing stream leaves the stream unusable for every later call).
        auto g = std::make_unique<at::cuda::CUDAGraph>();
        try {
          g->capture_begin();
          ref_.run_views(views_of(s.inputs), nullptr, m_.device);
          g->capture_end();
          s.graph = std::move(g);
          ++graphs;
        } catch (const std::exception& e) {
          graph_error = e.what();
          end_broken_capture();
          (void)g.release();  // its state refers to a capture that no longer exists: leaked, never reset
          m_.uncapturable.insert(req_.task.name);
          // The allocator still counts that capture as under way (no public call undoes it) and would fail
          // every later out-of-memory retry: this evaluation finishes, then a fresh worker takes over.
          m_.must_exit = true;
          r_.notes.push_back(
              "worker retired after this evaluation: a failed capture leaves LibTorch's "
              "allocator unusable");
        }
      }
    }
    if (m_.uncapturable.count(req_.task.name) && graph_error.empty())
      graph_error = "an earlier capture of this task's reference failed in this worker";
    if (!graph_error.empty()) {
      for (auto& s : pool) s.graph.reset();
      std::string first = graph_error.substr(0, graph_error.find('\n'));
      r_.notes.push_back("graph baseline unavailable: the reference could not be captured: " + first);
    }
    check_api(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    calibrate_null_region();

    size_t next = 0;
    bucket_run scratch;
    const auto warm_start = clock_type::now();
    for (int w = 0;
         warming_up(w, std::max(1, opt_.warmup), ms_between(warm_start, clock_type::now()), opt_.warmup_ms);
         ++w) {
      device_set& set = pool[next++ % pool.size()];
      double ignored;
      if (!timed_side(side::eager, set, ignored, scratch)) return;
      if (set.graph && !timed_side(side::graph, set, ignored, scratch)) return;
      if (!timed_side(side::candidate, set, ignored, scratch)) return;
    }

    int reruns = 0;
    bucket_run best = variance_gate(
        run_buckets(pool, next), opt_.max_spread, opt_.max_reruns, [&] { return run_buckets(pool, next); },
        reruns, r_.notes);
    if (best.failed) return;

    // The host's view against the events over all timed calls: events that miss part of the work.
    if (wall_exceeds_events(best.candidate_clocks, check_)) {
      std::vector<double> wall, ev;
      for (const auto& c : best.candidate_clocks) {
        wall.push_back(c.wall_ms - check_.null_wall_ms);
        ev.push_back(c.event_ms);
      }
      evidence(evidence_kind::wall_time_mismatch,
               "median host wall time " + fmt(median(wall)) +
                   " ms (less the empty region) against median stream-event time " + fmt(median(ev)) + " ms");
    }

    auto& t = r_.timing;
    t.eager_ms = best.eager_ms;
    t.candidate_ms = best.candidate_ms;
    t.bucket_speedups = best.speedups;
    t.eager_ms_median = median(best.eager_ms);
    t.candidate_ms_median = median(best.candidate_ms);
    t.speedup = median(best.speedups);
    t.spread = best.spread;
    t.trials_per_bucket = std::max(1, opt_.trials);
    t.reruns = reruns;
    t.graph_ms = best.graph_ms;
    t.graph_ms_median = median(best.graph_ms);
    t.speedup_vs_graph = best.graph_speedups.empty() ? 0.0 : median(best.graph_speedups);
    r_.timed = true;
    r_.speedup_vs_eager = t.speedup;
    r_.speedup_vs_graph = t.speedup_vs_graph;
    r_.notes.push_back("clocks: empty region " + fmt(check_.null_wall_ms) + " ms of host wall time");
    r_.notes.push_back(
        "checks: " + std::to_string(timed_checks_) + " of " + std::to_string(trials_drawn_) +
        " timed calls checked, unannounced; every trial on fresh input values, the candidate first");
    std::vector<double> host;
    for (const auto& c : best.candidate_clocks)
      if (c.host_ms > 0) host.push_back(c.host_ms);
    if (!host.empty())
      r_.notes.push_back("launch: the candidate's host time per call, median " + fmt(median(host)) +
                         " ms (gated: charged where longer than the device's)");

    // Roofline plausibility: every input read and the output written once at the device's peak bandwidth.
    const double bound = roofline_ms(static_cast<double>(io_bytes_), 0.0, m_.peak_bytes_per_s, 0.0);
    if (bound > 0 && t.candidate_ms_median > 0) {
      r_.peak_fraction = bound / t.candidate_ms_median;
      r_.notes.push_back("roofline: " + fmt(bound) + " ms for " + fmt(io_bytes_ / 1e6) + " MB at peak; " +
                         "candidate at " + fmt(100.0 * bound / t.candidate_ms_median) +
                         "% of peak bandwidth");
      if (t.candidate_ms_median < 0.5 * bound)
        evidence(evidence_kind::below_roofline,
                 "median " + fmt(t.candidate_ms_median) +
                     " ms is below half the time its inputs and output take to move at "
                     "the device's peak bandwidth (" +
                     fmt(bound) + " ms)");
    }
    pool_ = std::move(pool);
  }

  // Once more after timing: fresh inputs at fresh addresses; the same values again, at another address and
  // in place (results served from memory); new values at a timed address (results keyed on pointers).
  void post_timing() {
    auto inputs = make_inputs(base_seed_ + 5000, input_variant::nominal);
    auto out = make_output();
    auto c = checked_call(inputs, out, "after timing, fresh inputs");
    if (c.called && !c.cmp.ok)
      evidence(evidence_kind::post_timing_mismatch, "wrong on fresh inputs after timing: " + c.cmp.summary());
    if (!c.called || pool_.empty()) return;
    const auto m0 = clock_type::now();
    const bool probed = memo_probe(inputs, out, c.want);
    memo_ms = ms_between(m0, clock_type::now());
    if (!probed) return;
    device_set& reused = pool_.front();
    ref_.fill_inputs(views_of(reused.inputs), base_seed_ + 6000, input_variant::nominal, m_.device);
    auto c2 = checked_call(reused.inputs, reused.out, "after timing, new values at a timed address");
    if (c2.called && !c2.cmp.ok)
      evidence(evidence_kind::post_timing_mismatch,
               "stale result for new values at an input address used during timing "
               "(results cached by pointer?): " +
                   c2.cmp.summary());
  }

  // A kernel that computes takes as long on values it has seen as on fresh ones (the L2 is flushed before
  // every call); one that remembers answers takes a fraction. Twice, against the slower of a fresh call and
  // the timed median. False when a call failed.
  bool memo_probe(std::vector<at::Tensor>& a_in, at::Tensor& a_out, at::Tensor want) {
    device_set& b = pool_.size() > 1 ? pool_[1] : pool_.front();
    const double timed = r_.timing.candidate_ms_median;
    int quick = 0;
    double seen_ms = 0, fresh_ms = timed;
    for (int round = 0; round < 2; ++round) {
      if (round > 0) {
        ref_.fill_inputs(views_of(a_in), base_seed_ + 7000, input_variant::nominal, m_.device);
        poison_device(a_out);
        auto c0 = call_candidate(a_in, a_out, /*timed=*/true);
        if (!c0.ok) return r_.error = c0.error + " (after timing, fresh values)", false;
        fresh_ms = charged_ms(c0.clocks, check_);
        want = make_output();
        auto w = view_of(want);
        ref_.run_views(views_of(a_in), &w, m_.device);
      }
      for (size_t i = 0; i < a_in.size(); ++i) b.inputs[i].copy_(a_in[i]);
      poison_device(b.out);
      auto c1 = call_candidate(b.inputs, b.out, /*timed=*/true);
      if (!c1.ok) return r_.error = c1.error + " (after timing, seen values elsewhere)", false;
      auto cmp1 = compare_quick(b.out, want);
      poison_device(a_out);
      auto c2 = call_candidate(a_in, a_out, /*timed=*/true);
      if (!c2.ok) return r_.error = c2.error + " (after timing, seen values in place)", false;
      auto cmp2 = compare_quick(a_out, want);
      for (const auto* cmp : {&cmp1, &cmp2})
        if (!cmp->ok)
          evidence(evidence_kind::post_timing_mismatch, "wrong on values seen before: " + cmp->summary());
      seen_ms = std::min(charged_ms(c1.clocks, check_), charged_ms(c2.clocks, check_));
      if (seen_ms < 0.4 * std::max(fresh_ms, timed))
        ++quick;
      else
        break;  // a kernel that computes: the second round would only cost time
    }
    want.zero_();
    if (quick == 2)
      evidence(evidence_kind::result_cache, "calls on input values it had seen before took " + fmt(seen_ms) +
                                                " ms against " + fmt(std::max(fresh_ms, timed)) +
                                                " ms on fresh values: results served from "
                                                "memory, not computed");
    return true;
  }

  const eval_request& req_;
  const eval_options& opt_;
  const reference_executor& ref_;
  crucible_forward_fn fn_;
  cuda_evaluator::impl& m_;
  bench_result& r_;
  cru_context ctx_{};
  at::Tensor workspace_;
  int64_t io_bytes_ = 0;
  double atol_ = 0, rtol_ = 0;
  uint64_t base_seed_ = 0;
  std::mt19937 rng_;
  clock_check check_;
  int phase_calls_ = 0, phase_tails_ = 0;  // candidate calls this phase, and those with a device tail
  bool gate_off_ = false;                  // launches timed with the calls for the rest of the evaluation
  double max_tail_ms_ = 0;
  bool right_after_device_ = true;
  bool leaked_ = false;
  bool scrutiny_ = false;  ///< static features present: every timed call is checked
  device_state state_;     ///< as it was before the candidate's first call
  uint64_t trials_drawn_ = 0;
  int timed_checks_ = 0;
  std::vector<device_set> pool_;
};

}  // namespace

bench_result cuda_evaluator::evaluate(const eval_request& req, const std::string& worker_id) {
  auto t0 = clock_type::now();
  auto& m = *impl_;
  bench_result r;
  r.candidate_id = req.candidate_id;
  r.task = req.task.name;
  r.worker = worker_id;
  auto done = [&]() -> bench_result& {
    r.wall_s = std::chrono::duration<double>(clock_type::now() - t0).count();
    return r;
  };
  if (!m.init_error.empty()) {
    r.status = "error";
    r.error = "this worker has no usable CUDA device: " + m.init_error;
    return done();
  }
  loaded_candidate lib;
  auto lost = [&](const std::string& status, const std::string& what) {
    m.must_exit = true;
    lib.leak();  // its kernels may still be resident; the process is about to end anyway
    r.status = status;
    r.error = what + " (worker retired)";
  };
  try {
    c10::cuda::CUDAStreamGuard guard(*m.stream_holder);
    // A stream left capturing (by anything) fails every later call: no evaluation starts on one.
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(m.stream, &capturing) == cudaSuccess &&
        capturing != cudaStreamCaptureStatusNone)
      throw cuda_fault("error", "the worker's stream was left in capture mode");
    auto ref = m.references.get(req.task);
    if (!ref) {
      r.status = "error";
      r.error = "task '" + req.task.name + "' rejected by the reference: " + ref.message();
      return done();
    }
    if (std::string err = load_candidate(lib, req.artifact, m.loads, r); !err.empty()) {
      r.status = "load_error";
      r.error = err;
      return done();
    }
    auto t_load = clock_type::now();
    relieve_memory_pressure();
    // Static import features (load_candidate notes them) raise scrutiny; they decide nothing alone.
    const bool scrutiny = std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) {
      return n.rfind("static feature ", 0) == 0;
    });
    cuda_session s(req, **ref, lib.fn(), m, scrutiny, r);
    s.run();
    if (s.leaked()) lib.leak();
    r.notes.push_back("phases_ms: setup " + fmt(ms_between(t0, t_load)) + ", correctness " +
                      fmt(s.correctness_ms) + ", timing " + fmt(s.timing_ms) + " (fresh values " +
                      fmt(s.fill_ms) + ", checks " + fmt(s.check_ms) + "), post_timing " +
                      fmt(s.post_timing_ms) + " (memo probe " + fmt(s.memo_ms) + ")");
  } catch (const cuda_fault& f) {
    lost(f.status, f.what());
  } catch (const std::exception& e) {
    // LibTorch reports a lost context as an exception of its own: ask the device.
    cudaError_t now = cudaDeviceSynchronize();
    if (sticky(now)) {
      lost("crash", error_text(now) + "; the CUDA context is lost");
    } else {
      cudaGetLastError();
      std::string what = e.what();
      r.status = "error";
      // LibTorch failed inside the worker (out of memory, an allocator assertion): its state cannot be
      // trusted afterwards, so this worker answers and a fresh one takes the next evaluation.
      r.error = "evaluation failed: " + what.substr(0, what.find('\n')) + " (worker retired)";
      m.must_exit = true;
    }
  } catch (...) {
    r.status = "error";
    r.error = "evaluation failed with a non-standard exception";
  }
  if (!m.must_exit && memory_exhausted(r.notes)) m.must_exit = true;
  return done();
}

}  // namespace crucible::kernels
