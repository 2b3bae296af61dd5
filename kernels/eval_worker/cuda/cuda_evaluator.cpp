#include "kernels/eval_worker/cuda/cuda_evaluator.hpp"

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAGraph.h>
#include <ATen/record_function.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>

#include "kernels/abi/crucible_abi.h"
#include "kernels/eval/timing_stats.hpp"
#include "kernels/eval_worker/cuda/launch_gate.hpp"
#include "kernels/eval_worker/cuda/output_compare.hpp"
#include "kernels/eval_worker/evaluation_protocol.hpp"
#include "kernels/eval_worker/loaded_candidate.hpp"
#include "kernels/eval_worker/process_probe.hpp"
#include "kernels/eval_worker/reference_cache.hpp"
#ifdef CRUCIBLE_WITH_PYTHON
#include "kernels/python/kernelbench_candidate.hpp"
#include "kernels/python/kernelbench_reference.hpp"
#endif
#include "kernels/reference/tensor_bits.hpp"
#include "kernels/reference/torch_dtypes.hpp"
#include "kernels/task/chain_shapes.hpp"
#include "kernels/task/op_catalog.hpp"
#include "kernels/verify/verdict_vocabulary.hpp"
#include "messages/expected.hpp"

namespace crucible::kernels {

namespace {

using clock_type = std::chrono::steady_clock;

double ms_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// A correctness call still running after this long never finishes as far as the worker is concerned.
constexpr double call_deadline_s = 10.0;
// output_check's poison for 4-byte elements, written before every call of the candidate.
constexpr uint32_t poison32 = 0x7fc0deadu;
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

// Workspace for a C-ABI candidate's intermediates: generous (eight times its inputs and output), so emitted
// code rarely allocates, but never more than 4 GiB: KernelBench's largest problems move 13 GB, and eight
// times that is more than any device has. A KernelBench module never sees it (it allocates through PyTorch).
int64_t workspace_bytes(int64_t io_bytes, bool module) {
  if (module) return int64_t{256} << 20;
  return std::max<int64_t>(int64_t{256} << 20, std::min<int64_t>(8 * io_bytes, int64_t{4} << 30));
}

std::string gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / double(int64_t{1} << 30));
  return buf;
}

// The protocol's slots (inputs and output each) must fit beside the workspace, the eager output's copy, and
// what the calls allocate for themselves: the reference's and the candidate's outputs, a CUDA graph's pool,
// the fresh draws: three slots of room (measured: a 12 GiB ReLU's calls held 36 GiB beside its slots), with
// 10% of the free memory left to the allocator's rounding. A forward that allocates beyond its inputs and
// output (`forward_peak`: the peak of a KernelBench reference's first pass above what stays allocated; a
// scan's concatenations, a norm's squares) needs that again in each of the three: eager's call, the graph's
// pool, the candidate's call (kb1_92, cumsum_exclusive, ran out of memory mid-evaluation on the fixed room).
// A task too large for the configured seeds and input sets runs with fewer, and says so; one too large for
// one of each is an error before anything is allocated. `*planned`: the bytes the plan allows the
// evaluation (slots, workspace, the eager output's copy and the room), which the evaluation's measured peak
// is noted beside.
expected<eval_options> options_that_fit(const eval_request& req, const reference_model& ref, bool module,
                                        double forward_peak, std::vector<std::string>& notes,
                                        double* planned) {
  int64_t in_bytes = 0;
  for (const auto& in : req.task.inputs) in_bytes += numel(in.shape) * dtype_size(in.dtype);
  const int64_t out_bytes = numel(ref.output_shape()) * dtype_size(ref.output_dtype());
  const double slot = static_cast<double>(in_bytes + out_bytes);
  // Room of its own below 64 MiB is lost in the 10% margin.
  double transient = std::max(0.0, forward_peak - slot);
  if (transient < double(int64_t{64} << 20)) transient = 0;
  size_t free_b = 0, total_b = 0;
  if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
    cudaGetLastError();
    return req.options;
  }
  const auto need =
      static_cast<double>(evaluation_protocol::slots_needed(req.options) + 3) * slot + 3 * transient;
  if (need > 0.5 * static_cast<double>(free_b)) {
    // What LibTorch's cache holds (the reference's first forward pass) is free for this: counted after
    // emptying it, when the task is large enough for it to matter.
    c10::cuda::CUDACachingAllocator::emptyCache();
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
      cudaGetLastError();
      return req.options;
    }
  }
  // Everything the plan keeps beside the slots: the workspace, the room for the calls, the eager copy.
  const double beside_slots = static_cast<double>(workspace_bytes(in_bytes + out_bytes, module)) + 3 * slot +
                              3 * transient + (module ? static_cast<double>(out_bytes) : 0.0);
  const double budget = 0.9 * static_cast<double>(free_b) - beside_slots;
  const std::string forward_part =
      transient > 0 ? " (its forward allocates " + gib(transient) + " more, room for three times that kept)"
                    : "";
  auto fitted = evaluation_protocol::fit_slots(req.options, slot, budget);
  if (!fitted)
    return make_error("the task's inputs and output take " + gib(slot) + " a set" + forward_part + "; with " +
                      gib(static_cast<double>(free_b)) +
                      " of device memory free not even one correctness seed and one timing set fit beside "
                      "what the calls need");
  if (transient > 0 && fitted->seeds == req.options.seeds && fitted->input_sets == req.options.input_sets)
    notes.push_back("memory: the reference's forward allocates " + gib(transient) +
                    " beyond its inputs and output (room for three times that kept)");
  *planned = static_cast<double>(evaluation_protocol::slots_needed(*fitted)) * slot + beside_slots;
  if (fitted->seeds != req.options.seeds || fitted->input_sets != req.options.input_sets)
    notes.push_back("memory: the task's inputs and output take " + gib(slot) + " a set" + forward_part +
                    "; with " + gib(static_cast<double>(free_b)) + " free the protocol ran " +
                    std::to_string(fitted->seeds) + " of " + std::to_string(req.options.seeds) +
                    " correctness seeds and " + std::to_string(fitted->input_sets) + " of " +
                    std::to_string(req.options.input_sets) + " timing input sets");
  return *fitted;
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

cru_tensor view_of(const at::Tensor& t) {
  cru_tensor v{};
  v.data = t.data_ptr();
  v.dtype = dtype_code(dtype_name(t.scalar_type()));
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

// What the eager baseline and the next calls depend on that a candidate could leave changed, at load or in a
// call: the device's persisting-L2 carve-out, L2 fetch granularity and cache preference, the stream's access
// policy window, the shared cuBLAS handle's math and pointer modes. Taken when the worker starts; re-checked
// when the candidate has loaded and after each of its calls; restored when changed.
struct device_state {
  size_t persisting_l2 = 0, l2_fetch = 0;
  cudaFuncCache cache_config = cudaFuncCachePreferNone;
  size_t window_bytes = 0;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
  cublasPointerMode_t pointer = CUBLAS_POINTER_MODE_HOST;
};

device_state capture_state(cudaStream_t stream, cublasHandle_t blas) {
  device_state st;
  cudaDeviceGetLimit(&st.persisting_l2, cudaLimitPersistingL2CacheSize);
  cudaDeviceGetLimit(&st.l2_fetch, cudaLimitMaxL2FetchGranularity);
  cudaDeviceGetCacheConfig(&st.cache_config);
  cudaStreamAttrValue v{};
  if (cudaStreamGetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &v) == cudaSuccess)
    st.window_bytes = v.accessPolicyWindow.num_bytes;
  cublasGetMathMode(blas, &st.math);
  cublasGetPointerMode(blas, &st.pointer);
  cudaGetLastError();
  return st;
}

// What differs between two states, as a list for a note ("" when nothing does).
std::string state_changes(const device_state& was, const device_state& now) {
  std::string changed;
  auto note = [&](bool differs, const char* what) {
    if (differs) changed += (changed.empty() ? "" : ", ") + std::string(what);
  };
  note(now.persisting_l2 != was.persisting_l2, "the persisting L2 carve-out");
  note(now.l2_fetch != was.l2_fetch, "the L2 fetch granularity");
  note(now.cache_config != was.cache_config, "the device's cache preference");
  note(now.window_bytes != was.window_bytes, "the stream's access policy window");
  note(now.math != was.math, "the cuBLAS handle's math mode");
  note(now.pointer != was.pointer, "the cuBLAS handle's pointer mode");
  return changed;
}

void restore_state(const device_state& st, cudaStream_t stream, cublasHandle_t blas) {
  cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, st.persisting_l2);
  cudaDeviceSetLimit(cudaLimitMaxL2FetchGranularity, st.l2_fetch);
  cudaDeviceSetCacheConfig(st.cache_config);
  cudaStreamAttrValue v{};
  v.accessPolicyWindow.num_bytes = st.window_bytes;
  cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &v);
  cudaCtxResetPersistingL2Cache();
  cublasSetMathMode(blas, st.math);
  cublasSetPointerMode(blas, st.pointer);
  cudaGetLastError();
}

// ATen ops dispatched while the candidate's own code runs: the reference's library doing its work (a
// fallback to the baseline it is measured against, found however the candidate reached it: an import, dlsym,
// a pointer walked to). Counted by a RecordFunction callback installed only around the candidate's calls, so
// the baseline's own dispatch is never slowed by it.
std::atomic<bool> candidate_running{false};
std::atomic<int64_t> aten_ops_in_candidate{0};
std::atomic<const char*> first_aten_op{nullptr};

std::unique_ptr<at::ObserverContext> on_aten_op(const at::RecordFunction& fn) {
  if (candidate_running.load(std::memory_order_relaxed) && aten_ops_in_candidate.fetch_add(1) == 0)
    first_aten_op.store(fn.name());
  return nullptr;
}

// Installs the callback for its lifetime and reports what it counted.
class aten_watch {
 public:
  aten_watch() {
    aten_ops_in_candidate.store(0);
    first_aten_op.store(nullptr);
    handle_ = at::addGlobalCallback(at::RecordFunctionCallback(&on_aten_op));
  }
  ~aten_watch() { at::removeCallback(handle_); }
  aten_watch(const aten_watch&) = delete;
  aten_watch& operator=(const aten_watch&) = delete;
  static int64_t ops() { return aten_ops_in_candidate.load(); }
  static std::string first() {
    const char* n = first_aten_op.load();
    return n ? n : "?";
  }

 private:
  at::CallbackHandle handle_{};
};

// What the backend calls as the candidate: a C-ABI library's entry point, or a KernelBench module's forward
// pass hosted by the worker's interpreter.
struct candidate_entry {
  std::function<int(const cru_context*, const cru_tensor*, int32_t, cru_tensor*, int32_t)> call;
  std::function<void()> enter, leave;  ///< around each call, outside its clock (empty: nothing)
  /// LibTorch ops inside the call are the reference's library doing the work (a C-ABI candidate); a Python
  /// module's ops are PyTorch's own, its way of writing code.
  bool watch_aten = true;
  /// The eager reference copies its result into an output, as the entry must (a module returns a new
  /// tensor, copied into the ABI's output): like with like.
  bool copy_eager_output = false;
  /// A KernelBench module: it never sees the ABI's workspace (it allocates through PyTorch).
  bool python_module = false;
  /// What the candidate changed of what the reference computes with ("" when nothing; empty function: the
  /// reference is out of the candidate's reach).
  std::function<std::string()> reference_changes;
  /// Why the last failed call's output was disguised, and forgets it ("" when it was not; empty function:
  /// a C-ABI candidate, which writes into the ABI's output and cannot return one).
  std::function<std::string()> disguised_output;
  /// The reference's other forms timed as baselines (torch.compile's), and how one runs on views.
  std::vector<baseline> more_baselines;
  std::function<void(baseline, const std::vector<cru_tensor>&, const cru_tensor*)> run_baseline;
};

}  // namespace

struct cuda_evaluator::impl {
  int device = 0;
  std::string init_error;
  std::string bind_parts;  ///< where binding the device went: "context 150, cublas 20, ..." (ms)
  bool must_exit = false;
  bool single_use = false;  ///< a forked child: the process ends with its request
  std::optional<c10::cuda::CUDAStream> stream_holder;
  cudaStream_t stream = nullptr;
  /// For KernelBench modules: a stream that synchronizes with the legacy default stream, where kernels
  /// launched without a stream (`<<<grid, block>>>` in a load_inline extension) run, as they do under
  /// KernelBench's harness; made at the first such evaluation.
  std::optional<c10::cuda::CUDAStream> blocking_holder;
  cublasHandle_t blas = nullptr;
  cudaEvent_t ev0 = nullptr, ev1 = nullptr;
  at::Tensor flush_buf;
  uint64_t flush_round = 0;
  std::unique_ptr<launch_gate> gate;          ///< holds the device while a call is enqueued
  std::unique_ptr<device_comparer> comparer;  ///< float32 outputs against the reference in one pass
  double peak_bytes_per_s = 0.0;
  std::string name;
  int sms = 0;
  size_t l2_bytes = 0;
  reference_cache references;
  std::map<std::string, int> loads;
  std::set<std::string> uncapturable;  ///< tasks whose reference could not be captured as a CUDA graph
  device_state initial_state;          ///< as the worker set it up, before any candidate loaded

  at::TensorOptions options(const std::string& dtype) const {
    return at::TensorOptions().dtype(scalar_type_of(dtype)).device(at::kCUDA, device);
  }
};

cuda_evaluator::cuda_evaluator(int device) : impl_(std::make_unique<impl>()) {
  auto& m = *impl_;
  m.device = device;
  auto t = clock_type::now();
  auto part = [&](const char* name) {
    const auto now = clock_type::now();
    char buf[48];
    std::snprintf(buf, sizeof buf, "%s%s %.0f", m.bind_parts.empty() ? "" : ", ", name, ms_between(t, now));
    m.bind_parts += buf;
    t = now;
  };
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  part("driver");
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
    check_api(cudaFree(nullptr), "cudaFree");  // the context exists from here on
    part("context");
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
    // The greatest priority the device has: work the candidate puts on a stream of its own may equal it but
    // never preempt the launch gate's hold or the call's own stream.
    int least = 0, greatest = 0;
    check_api(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange");
    check_api(cudaStreamCreateWithPriority(&m.stream, cudaStreamNonBlocking, greatest),
              "cudaStreamCreateWithPriority");
    m.stream_holder = c10::cuda::getStreamFromExternal(m.stream, static_cast<c10::DeviceIndex>(device));
    part("properties, stream");
    if (cublasCreate(&m.blas) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasCreate failed");
    part("cublas");
    cublasSetStream(m.blas, m.stream);
    // Candidates compute in float32 unless they ask cuBLAS otherwise themselves (no TF32 by default).
    cublasSetMathMode(m.blas, CUBLAS_DEFAULT_MATH);
    check_api(cudaEventCreate(&m.ev0), "cudaEventCreate");
    check_api(cudaEventCreate(&m.ev1), "cudaEventCreate");
    // Four times the L2 (at least 256 MB), written before every call (~70 us on an H200), evicts whatever the
    // previous call left there.
    int64_t flush = static_cast<int64_t>(std::max<size_t>(4 * m.l2_bytes, size_t{256} << 20));
    m.flush_buf = at::empty({flush}, at::TensorOptions().dtype(at::kByte).device(at::kCUDA, device));
    part("flush buffer");
    m.gate = std::make_unique<launch_gate>(gate_deadline);
    part("launch gate");
    m.comparer = std::make_unique<device_comparer>();
    part("comparer");
    set_reference_strict_fp32();
    m.initial_state = capture_state(m.stream, m.blas);
    part("state");
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
  m.gate.reset();
  if (m.stream) cudaStreamDestroy(m.stream);
}

const std::string& cuda_evaluator::init_error() const {
  return impl_->init_error;
}
const std::string& cuda_evaluator::bind_parts() const {
  return impl_->bind_parts;
}
bool cuda_evaluator::must_exit() const {
  return impl_->must_exit;
}
void cuda_evaluator::set_single_use() {
  impl_->single_use = true;
}

bool cuda_driver_initialized() {
  int n = 0;
  // Every driver call but a few answers CUDA_ERROR_NOT_INITIALIZED before cuInit, without initializing.
  return cuDeviceGetCount(&n) != CUDA_ERROR_NOT_INITIALIZED;
}

std::string cuda_evaluator::describe() const {
  const auto& m = *impl_;
  if (!m.init_error.empty()) return "no usable CUDA device: " + m.init_error;
  std::string gate = !m.gate || !m.gate->error().empty() ? "; no launch gate"
                     : m.gate->scope_note().empty()      ? ""
                                                         : "; " + m.gate->scope_note();
  std::string compare = m.comparer && !m.comparer->error().empty()
                            ? "; outputs compared by ATen ops (" + m.comparer->error() + ")"
                            : "";
  return m.name + ", " + std::to_string(m.sms) + " SMs, L2 " + std::to_string(m.l2_bytes >> 20) + " MiB, " +
         fmt_number(m.peak_bytes_per_s / 1e12) + " TB/s" + gate + compare;
}

namespace {

// One slot: an input set and an output on the device, at addresses of their own.
struct device_set {
  std::vector<at::Tensor> inputs;
  at::Tensor out;
  std::unique_ptr<at::cuda::CUDAGraph> graph;  // the reference captured on these inputs (timing slots)
};

struct call_result {
  bool ok = false;
  std::string error;  ///< non-zero return, exception, or a non-sticky CUDA error
  call_clocks clocks;
  at::Tensor at_stream_end;  ///< the output as the stream left it (checked calls only), a device copy
  bool gate_forced = false;  ///< the launch gate's watchdog opened it: the call waited on the device
  bool filled = false;       ///< the gate's fill took the SMs the call's stream left (checked calls)
};

// The CUDA target's way of doing each step of the protocol (evaluation_protocol.hpp): slots on the device,
// every call of the candidate behind the same poison, flush, device-wide wait and launch gate, timed by
// stream events cross-checked with the host's device-wide view, the reference and its CUDA graph timed the
// same way, device state re-checked after every call.
class cuda_backend final : public device_backend {
 public:
  cuda_backend(const eval_request& req, const reference_model& ref, candidate_entry entry,
               cuda_evaluator::impl& m, bench_result& out)
      : req_(req),
        opt_(req.options),
        ref_(ref),
        entry_(std::move(entry)),
        m_(m),
        r_(out),
        state_(m.initial_state) {
    atol_ = task_atol(req.task);
    rtol_ = task_rtol(req.task);
    // Workspace for the candidate's intermediates: generous, so emitted code rarely allocates.
    int64_t io_bytes = 0;
    for (const auto& in : req.task.inputs) io_bytes += numel(in.shape) * dtype_size(in.dtype);
    io_bytes += numel(ref.output_shape()) * dtype_size(ref.output_dtype());
    const int64_t ws = workspace_bytes(io_bytes, entry_.python_module);
    workspace_ = at::empty({ws}, at::TensorOptions().dtype(at::kByte).device(at::kCUDA, m.device));
    ctx_.abi_version = CRUCIBLE_ABI_VERSION;
    ctx_.device = m.device;
    ctx_.stream = m.stream;
    ctx_.workspace = workspace_.data_ptr();
    ctx_.workspace_bytes = static_cast<size_t>(ws);
    ctx_.blas = m.blas;
    const auto t_alloc = clock_type::now();
    relieve_memory_pressure();
    for (size_t k = 0; k < evaluation_protocol::slots_needed(opt_); ++k) {
      device_set set;
      for (const auto& spec : req.task.inputs) set.inputs.push_back(alloc(spec.dtype, spec.shape));
      set.out = make_output();
      slots_.push_back(std::move(set));
    }
    if (entry_.copy_eager_output) eager_out_ = make_output();
    costs.alloc_ms = ms_between(t_alloc, clock_type::now());
  }

  /// Where the backend's time went (milliseconds), for the phases_ms note: what each check costs.
  struct backend_costs {
    int regions = 0;       ///< flushed, gated, timed calls (candidate, baselines, empty calibration)
    double region_ms = 0;  ///< all of them, flush included
    double flush_ms = 0;   ///< device-wide waits and the L2 flush before each
    double settle_ms = 0;  ///< pauses after checked calls
    double alloc_ms = 0;   ///< the slots
    /// The steps of every region and check (poison, sync, close, enqueue, open, to_stream, to_idle, ...):
    /// where a saving would come from.
    std::map<std::string, double> parts;
    void add(const char* part, clock_type::time_point from, clock_type::time_point to) {
      parts[part] += ms_between(from, to);
    }
  } costs;

  bool leaked() const { return leaked_; }

  size_t slots() const override { return slots_.size(); }
  bool halted() const override { return r_.status != "ok" || !r_.error.empty(); }
  // The candidate shares the device with the worker: a reference output for a trial's values must not
  // exist anywhere on it while the candidate runs on them.
  bool candidate_first() const override { return true; }
  device_peaks peaks() const override { return {m_.peak_bytes_per_s, 0.0, "the device"}; }
  task_cost minimum_cost() const override { return ref_.minimum_cost(); }
  bool has_baseline(baseline b, size_t k) const override {
    if (b == baseline::eager) return true;
    if (b == baseline::graph) return slots_[k].graph != nullptr;
    return std::find(entry_.more_baselines.begin(), entry_.more_baselines.end(), b) !=
           entry_.more_baselines.end();
  }

  void fill(size_t k, uint64_t seed, input_variant variant) override {
    ref_.fill_inputs(views_of(slots_[k].inputs), seed, variant, m_.device);
  }

  void copy_inputs(size_t from, size_t to) override {
    for (size_t i = 0; i < slots_[from].inputs.size(); ++i)
      slots_[to].inputs[i].copy_(slots_[from].inputs[i]);
  }

  // The state the artifact's initialisers left, before its first call; the empty region the checked calls
  // are compared with (timing measures it again, once the device is warm).
  bool calibrate() override {
    check_state("when it had loaded");
    guard_reference("when it had loaded");
    calibrate_null_region();
    return true;
  }

  // A checked call: the output read as the call's stream left it and again once the whole device is idle,
  // the inputs against pristine copies, then the reference on those copies.
  checked_outcome checked_call(size_t k, const std::string& phase) override {
    checked_outcome c;
    device_set& set = slots_[k];
    const auto c0 = clock_type::now();
    auto pristine = clone_all(set.inputs);
    at::Tensor snapshot = at::empty_like(set.out);
    int threads_before = thread_count();
    poison_device(set.out);
    const auto c1 = clock_type::now();
    costs.add("checked_copies", c0, c1);
    auto res = call_candidate(set, /*checked=*/true, snapshot);
    const auto c2 = clock_type::now();
    if (!res.ok) {
      r_.error = res.error + " (" + phase + ")";
      return c;
    }
    c.called = true;
    note_outside(res);
    at::Tensor got = std::move(res.at_stream_end);
    at::Tensor after_device = set.out.clone();
    if (!same_bits(after_device, got))
      add_evidence(r_, evidence_kind::output_changed_after_return,
                   "the output changed after the call's stream finished, before the device was idle (" +
                       phase + "): work on another stream wrote it");
    check_inputs(set.inputs, pristine, "after the call (" + phase + ")");
    const auto c3 = clock_type::now();
    costs.add("checked_reads", c2, c3);
    at::Tensor want = make_output();
    guard_reference(phase);
    {
      auto copy = clone_all(pristine);
      auto w = view_of(want);
      ref_.run_views(views_of(copy), &w, m_.device);
    }
    const auto c4 = clock_type::now();
    costs.add("checked_reference", c3, c4);
    if (auto f = fused_compare(got, want)) {
      c.cmp = f->cmp;
      c.got_digest = f->got_digest;
      c.want_digest = f->want_digest;
    } else {
      c.cmp = compare_device(got, want);
      c.got_digest = digest(got);
      c.want_digest = digest(want);
    }
    if (c.cmp.poisoned > 0)
      add_evidence(r_, evidence_kind::output_unwritten,
                   std::to_string(c.cmp.poisoned) + " of " + std::to_string(got.numel()) +
                       " output elements not written when the call's stream finished (" + phase + ")");
    const auto c5 = clock_type::now();
    costs.add("checked_compare", c4, c5);

    // Deferred work from host threads shows after a pause.
    if (opt_.settle_ms > 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(opt_.settle_ms * 1000)));
      costs.settle_ms += opt_.settle_ms;
    }
    check_api(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    if (!same_bits(set.out, after_device))
      add_evidence(r_, evidence_kind::output_changed_after_return,
                   "output changed within " + fmt_number(opt_.settle_ms) + " ms after the call returned (" +
                       phase + ")");
    check_inputs(set.inputs, pristine, "after the settle wait (" + phase + ")");
    int threads_settled = thread_count();
    // The CUDA runtime, cuBLAS and cuDNN start helper threads of their own on first use, so a grown thread
    // count is a note here; a candidate that starts threads itself imports pthread_create (a static feature,
    // which raises scrutiny). The library stays mapped either way.
    if (threads_before >= 0 && threads_settled > threads_before) {
      leaked_ = true;
      r_.notes.push_back("threads: " + std::to_string(threads_before) + " before the call, " +
                         std::to_string(threads_settled) + " after it (" + phase + ")");
    }
    right_after_device_ = right_after_device_ && compare_quick(after_device, want).ok;
    want.zero_();
    costs.add("checked_after", c5, clock_type::now());
    return c;
  }

  double timed_call(size_t k, timed_use use, const std::string& phase) override {
    device_set& set = slots_[k];
    const auto p0 = clock_type::now();
    poison_device(set.out);
    costs.add("poison", p0, clock_type::now());
    double lead_ms = 0;
    if (opt_.lead_region) {
      // Nothing computed, so no reference output for these values is in reach: the candidate's call then
      // follows a region, as every baseline's does, not the fresh draw and the checks of the trial before.
      const auto l0 = clock_type::now();
      auto lead = region([] { return 0; }, false, false, nullptr, "the empty region before the candidate");
      costs.add("lead", l0, clock_type::now());
      if (!lead.ok) {
        r_.error = lead.error + " (" + phase + ")";
        return -1;
      }
      // Work in it can only be the candidate's, left running: charged to its call. Below the thresholds an
      // empty region's clocks are noise, and charging their positive part would bias against the candidate.
      ++leads_;
      if (busy_before(lead.clocks, check_) || outside_stream(lead.clocks, check_)) {
        lead_ms = charged_ms(lead.clocks, check_);
        ++busy_leads_;
        max_busy_lead_ms_ = std::max(max_busy_lead_ms_, lead_ms);
      }
    }
    auto c = call_candidate(set, /*checked=*/false);
    if (!c.ok) {
      r_.error = c.error + " (" + phase + ")";
      return -1;
    }
    if (c.gate_forced) {  // measured with the watchdog's delay in it: again, with the launch timed
      gate_off(
          "the candidate waited on the device inside its launch (a synchronize, or more launches than "
          "the stream queues)");
      return timed_call(k, use, phase);
    }
    note_outside(c);
    if (use == timed_use::bucket) bucket_clocks_.push_back(c.clocks);
    const double charged = charged_ms(c.clocks, check_) + lead_ms;
    last_extra_ms_ = charged - std::max(c.clocks.event_ms, c.clocks.host_ms);
    beyond_events_.candidate.add(last_extra_ms_);
    return charged;
  }

  double last_extra_ms() const override { return last_extra_ms_; }

  double timed_baseline(baseline b, size_t k, const std::string& phase) override {
    device_set& set = slots_[k];
    auto c = b == baseline::eager   ? call_eager(set.inputs)
             : b == baseline::graph ? call_graph(set)
                                    : call_more(b, set.inputs);
    if (!c.ok) {
      r_.error = c.error + " (" + phase + ")";
      return -1;
    }
    if (c.gate_forced) {
      gate_off(std::string(baseline_name(b)) + " waited on the device inside its launch");
      return timed_baseline(b, k, phase);
    }
    // The reference's work is all on the stream. Time the device spent on anything else around it (a tail,
    // a busy flush) can only be the candidate's, left running between its calls: charged to the baseline it
    // would raise the speedup, so it is counted against the candidate instead.
    const bool busy = outside_stream(c.clocks, check_) || busy_before(c.clocks, check_);
    if (busy) ++busy_baselines_;
    ++baselines_;
    double timed = std::max(c.clocks.event_ms, c.clocks.host_ms);
    const double extra = charged_ms(c.clocks, check_) - timed;
    if (b == baseline::eager) beyond_events_.eager.add(extra);
    last_extra_ms_ = 0;
    if (!req_.options.charge_reference_tails || busy) return timed;
    // Per bucket: offered whole, the protocol caps each bucket's mean at the candidate's in that bucket.
    if (req_.options.bucket_charge_cap) {
      last_extra_ms_ = extra;
      return timed;
    }
    // Capped at what the candidate pays on average and on its median call: work it leaves for the baseline's
    // calls then costs it at least as much in its own (the median: a few dear calls, which the speedup's
    // medians ignore, must not raise the cap).
    if (beyond_events_.candidate.n() > 0)
      timed += std::min({extra, beyond_events_.candidate.mean(), median(beyond_events_.candidate.values)});
    return timed;
  }

  // Against the reference recomputed now, outside the clock; what it computed is wiped before the next call.
  output_comparison check_output(size_t k, const std::string& phase) override {
    device_set& set = slots_[k];
    const auto k0 = clock_type::now();
    guard_reference(phase);
    at::Tensor want = make_output();
    auto w = view_of(want);
    ref_.run_views(views_of(set.inputs), &w, m_.device);
    const auto k1 = clock_type::now();
    auto cmp = compare_quick(set.out, want);
    want.zero_();
    costs.add("check_reference", k0, k1);
    costs.add("check_compare", k1, clock_type::now());
    return cmp;
  }

  bool prepare_timing(size_t first, size_t count) override {
    relieve_memory_pressure();
    std::string graph_error;
    for (size_t k = first; k < first + count; ++k) {
      auto& s = slots_[k];
      fill(k, k, input_variant::nominal);  // values for the warm-up and the capture; every trial draws anew
      // Warm the eager path on these inputs before capturing it (lazy library initialisation must not be
      // captured), then capture it once for the graph baseline.
      ref_.run_views(views_of(s.inputs), eager_out(), m_.device);
      if (graph_error.empty() && !m_.uncapturable.count(req_.task.name)) {
        check_api(cudaStreamSynchronize(m_.stream), "cudaStreamSynchronize");
        // Held outside the try: a failed capture must be ended on the stream before the graph object goes
        // (its destructor on a still-capturing stream leaves the stream unusable for every later call).
        auto g = std::make_unique<at::cuda::CUDAGraph>();
        try {
          g->capture_begin();
          ref_.run_views(views_of(s.inputs), eager_out(), m_.device);
          g->capture_end();
          g->replay();  // a graph's first launch uploads it and may wait on the device: never in a gated
                        // region
          s.graph = std::move(g);
        } catch (const std::exception& e) {
          graph_error = e.what();
          m_.uncapturable.insert(req_.task.name);
          // Refused by PyTorch before CUDA saw anything wrong (a synchronizing copy, a CPU tensor), the
          // capture is still valid: ended through the graph object, what capture_begin set up (the
          // allocator's pool, the generators' capture state) is undone, and the partial graph dropped.
          bool ended = false;
          try {
            g->capture_end();
            ended = true;
          } catch (const std::exception&) {
          }
          if (ended) {
            g.reset();
            cudaGetLastError();
          } else {
            end_broken_capture();
            (void)g.release();  // its state refers to a capture that no longer exists: leaked, never reset
            // The allocator still counts that capture as under way (no public call undoes it) and would
            // fail every later out-of-memory retry: this evaluation finishes, then a fresh worker takes over.
            m_.must_exit = true;
            r_.notes.push_back(
                "worker retired after this evaluation: a failed capture leaves LibTorch's "
                "allocator unusable");
          }
        }
      }
    }
    if (m_.uncapturable.count(req_.task.name) && graph_error.empty())
      graph_error = "an earlier capture of this task's reference failed in this worker";
    if (!graph_error.empty()) {
      for (auto& s : slots_) s.graph.reset();
      std::string first_line = graph_error.substr(0, graph_error.find('\n'));
      r_.notes.push_back("graph baseline unavailable: the reference could not be captured: " + first_line);
    }
    check_api(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    calibrate_null_region();
    return true;
  }

  void timing_done() override {
    // The host's view against the events over all timed calls: events that miss part of the work.
    if (wall_exceeds_events(bucket_clocks_, check_)) {
      std::vector<double> wall, ev;
      for (const auto& c : bucket_clocks_) {
        wall.push_back(c.wall_ms - check_.null_wall_ms);
        ev.push_back(c.event_ms);
      }
      add_evidence(r_, evidence_kind::wall_time_mismatch,
                   "median host wall time " + fmt_number(median(wall)) +
                       " ms (less the empty region) against median stream-event time " +
                       fmt_number(median(ev)) + " ms");
    }
    r_.notes.push_back("clocks: empty region " + fmt_number(check_.null_wall_ms) + " ms of host wall time, " +
                       fmt_number(check_.null_before_ms) + " ms to flush and hold the device");
    std::vector<double> host;
    for (const auto& c : bucket_clocks_)
      if (c.host_ms > 0) host.push_back(c.host_ms);
    if (!host.empty())
      r_.notes.push_back("launch: the candidate's host time per call, median " + fmt_number(median(host)) +
                         " ms (gated: charged where longer than the device's)");
  }

  void correctness_done() override {}

  // Device tails are judged over every call of the evaluation: a few calls are too few to tell a side
  // stream (a tail at every call) from a host that was slow to look (a tail now and then).
  void finish() override {
    guard_reference("at the end of the evaluation");
    if (seen_as_the_rule(tails_, calls_ - filled_calls_))
      add_evidence(r_, evidence_kind::work_outside_stream,
                   "the device was still busy up to " + fmt_number(max_tail_ms_) +
                       " ms after the call's stream had finished, in " + std::to_string(tails_) + " of " +
                       std::to_string(calls_ - filled_calls_) +
                       " calls: work on another stream outlived the call");
    if (filled_calls_ > 0)
      r_.notes.push_back(
          "ordering: " + std::to_string(filled_calls_) +
          " checked call(s) had the device first, other streams only after the output was read");
    // Work that runs with the flush at every call is the candidate's; a host preempted in the flush now and
    // then is not (each such call is still charged its longer flush).
    if (seen_as_the_rule(befores_, calls_))
      add_evidence(r_, evidence_kind::work_before_call,
                   "the device was busy with other work for up to " + fmt_number(max_before_ms_) +
                       " ms while the worker flushed it before the call, in " + std::to_string(befores_) +
                       " of " + std::to_string(calls_) + " calls: the candidate's work ran before its call");
    // A note, not evidence: a cuBLAS gemm with a large K showed it at every eager call of an honest program.
    if (busy_baselines_ > 0)
      r_.notes.push_back("clocks: other work around " + std::to_string(busy_baselines_) + " of " +
                         std::to_string(baselines_) + " timed reference calls (not charged to them)");
    // What the candidate's charge adds to its events (tails and longer flushes, however short) beside what
    // the same rule adds to the eager reference's: the two tell whether an A/A speedup off 1 is this rule.
    if (beyond_events_.candidate.n() > 0 && beyond_events_.eager.n() > 0)
      r_.notes.push_back("clocks: charged beyond the events, a candidate call " +
                         fmt_number(beyond_events_.candidate.mean()) + " ms on average (" +
                         std::to_string(beyond_events_.candidate.n()) + " calls); the eager reference's " +
                         fmt_number(beyond_events_.eager.mean()) + " ms under the same rule (" +
                         std::to_string(beyond_events_.eager.n()) + " calls, " +
                         (req_.options.charge_reference_tails
                              ? (req_.options.bucket_charge_cap
                                     ? "charged per bucket up to the candidate's mean charge in it)"
                                     : "charged up to the candidate's mean and median charge)")
                              : "not charged: benchmark.charge_reference_tails is off)"));
    if (tails_ > 0 && !seen_as_the_rule(tails_, calls_ - filled_calls_))
      r_.notes.push_back("clocks: the device was still busy after the stream of " + std::to_string(tails_) +
                         " of " + std::to_string(calls_ - filled_calls_) + " candidate calls (by up to " +
                         fmt_number(max_tail_ms_) + " ms), charged to them");
    if (befores_ > 0)
      r_.notes.push_back("clocks: the flush took longer than on an idle device before " +
                         std::to_string(befores_) + " of " + std::to_string(calls_) +
                         " candidate calls (by up to " + fmt_number(max_before_ms_) +
                         " ms), charged to them");
    if (busy_leads_ > 0)
      r_.notes.push_back("clocks: the device was busy in " + std::to_string(busy_leads_) + " of " +
                         std::to_string(leads_) +
                         " empty regions before the candidate's timed calls (by up to " +
                         fmt_number(max_busy_lead_ms_) + " ms), charged to those calls");
    if (forced_checked_ > 0)
      r_.notes.push_back(
          "gate: " + std::to_string(forced_checked_) +
          " checked call(s) waited on the device inside their launch; the gate's watchdog opened");
    if (reference_ops_ > 0)
      add_evidence(r_, evidence_kind::reference_library_call,
                   "the candidate's code dispatched " + std::to_string(reference_ops_) +
                       " LibTorch op(s) during its calls (the first: " + first_reference_op_ +
                       "): the reference's own library doing the work it is measured against");
  }

  // The one hack whose cost is still worth measuring (so the report shows what hiding it would have
  // gained): work on another stream that produced the right output, late. Evidence that only says the work
  // escaped the stream, with the device tails saying so too.
  bool time_despite_evidence() const override {
    if (!r_.error.empty() || !right_after_device_ || r_.evidence.empty() || reference_ops_ > 0) return false;
    bool outside = seen_as_the_rule(tails_, calls_ - filled_calls_);
    for (const auto& tag : r_.evidence) {
      const auto kind = parse_evidence(tag);
      // Output that changed once the stream had finished was written by work outside it; a fill that kept
      // that work back until the output was read shows no tail.
      if (kind == evidence_kind::work_outside_stream || kind == evidence_kind::output_changed_after_return)
        outside = true;
      else if (kind != evidence_kind::output_changed_after_return && kind != evidence_kind::output_unwritten)
        return false;
    }
    return outside;
  }

 private:
  at::Tensor alloc(const std::string& dtype, const std::vector<int64_t>& shape) {
    return at::empty(shape, m_.options(dtype));
  }
  at::Tensor make_output() { return alloc(ref_.output_dtype(), ref_.output_shape()); }

  static std::vector<at::Tensor> clone_all(const std::vector<at::Tensor>& v) {
    std::vector<at::Tensor> out;
    for (const auto& t : v) out.push_back(t.clone());
    return out;
  }

  // A digest of a device tensor's bytes, computed there (copying outputs of hundreds of MB to the host would
  // cost more than the call): the sum of its words, of their squares and of neighbours' products, so equal
  // bytes give equal digests and different outputs of real kernels do not collide.
  uint64_t digest(const at::Tensor& t) {
    const int64_t bytes = static_cast<int64_t>(t.nbytes());
    if (bytes == 0) return 0;
    const bool words = bytes % 4 == 0;
    auto o = at::TensorOptions().device(at::kCUDA, m_.device).dtype(words ? at::kInt : at::kByte);
    at::Tensor v = at::from_blob(t.data_ptr(), {words ? bytes / 4 : bytes}, o).to(at::kLong);
    const int64_t n = v.numel();
    at::Tensor parts = at::stack({v.sum(), (v * v).sum(),
                                  n > 1 ? (v.narrow(0, 0, n - 1) * v.narrow(0, 1, n - 1)).sum() : v.sum()})
                           .cpu();
    const int64_t* h = parts.data_ptr<int64_t>();
    return static_cast<uint64_t>(h[0]) * 0x9e3779b97f4a7c15ull ^
           static_cast<uint64_t>(h[1]) * 0xc2b2ae3d27d4eb4full ^ static_cast<uint64_t>(h[2]);
  }

  // The poison pattern of output_check (a NaN payload arithmetic never makes), written on the device before
  // every call of the candidate, checked or timed.
  void poison_device(at::Tensor& t) {
    const int64_t n = t.numel();
    if (n == 0) return;
    const auto sz = t.element_size();
    auto o = at::TensorOptions().device(at::kCUDA, m_.device);
    if (sz == 4)
      at::from_blob(t.data_ptr(), {n}, o.dtype(at::kInt)).fill_(static_cast<int32_t>(poison32));
    else if (sz == 2)
      at::from_blob(t.data_ptr(), {n}, o.dtype(at::kShort)).fill_(static_cast<int16_t>(0x7fda));
    else if (sz == 8)
      at::from_blob(t.data_ptr(), {n}, o.dtype(at::kLong)).fill_(static_cast<int64_t>(0x7ff80000deaddeadull));
    else
      check_api(cudaMemsetAsync(t.data_ptr(), 0xa5, t.nbytes(), m_.stream), "cudaMemsetAsync");
  }

  // One pass over both on the device for float32 outputs (device_comparer); nothing for other dtypes.
  std::optional<device_comparer::result> fused_compare(const at::Tensor& got, const at::Tensor& want) {
    if (!m_.comparer || got.scalar_type() != at::kFloat || want.scalar_type() != at::kFloat ||
        got.numel() != want.numel() || !got.is_contiguous() || !want.is_contiguous())
      return std::nullopt;
    return m_.comparer->compare_f32(got.data_ptr(), want.data_ptr(), got.numel(), rtol_, atol_, poison32,
                                    m_.stream);
  }

  int64_t count_poisoned_device(const at::Tensor& t) {
    if (t.element_size() != 4 || t.numel() == 0) return 0;
    auto bits = at::from_blob(t.data_ptr(), {t.numel()},
                              at::TensorOptions().dtype(at::kInt).device(at::kCUDA, m_.device));
    return bits.eq(static_cast<int32_t>(poison32)).sum().item<int64_t>();
  }

  // The output checks of output_check.hpp, on the device (outputs are hundreds of MB; copying them to the
  // host for every check would make the GPU wait on the CPU): allclose with the task's tolerances, the same
  // non-finites, and poisoned elements counted (always a mismatch).
  output_comparison compare_device(const at::Tensor& got, const at::Tensor& want) {
    if (auto f = fused_compare(got, want)) return f->cmp;
    output_comparison c;
    c.numel = got.numel();
    c.poisoned = count_poisoned_device(got);
    at::Tensor g = got.to(at::kDouble), w = want.to(at::kDouble);
    at::Tensor close = at::isclose(g, w, rtol_, atol_, /*equal_nan=*/true);
    c.mismatches = c.numel - close.sum().item<int64_t>();
    // argmin of the flat "close" mask: the first element outside tolerance (0-d outputs included).
    if (c.mismatches > 0) c.first_mismatch = close.reshape({-1}).to(at::kInt).argmin().item<int64_t>();
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

  // One pass and one wait when the output is right (the common case); the full comparison only when not.
  output_comparison compare_quick(const at::Tensor& got, const at::Tensor& want) {
    if (auto f = fused_compare(got, want)) return f->cmp;
    if (at::isclose(got, want, rtol_, atol_, /*equal_nan=*/true).all().item<bool>()) {
      output_comparison c;
      c.ok = true;
      c.numel = got.numel();
      return c;
    }
    return compare_device(got, want);
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

  // Before every region: the whole device idle (whatever was queued before, the output's poison included,
  // has finished), then the L2 evicted. Gated, the gate enqueues the flush and holds the device right after
  // it, timing both on the device (call_clocks::before_ms: on an idle device that is the flush, and
  // taking longer says something else ran); otherwise the host waits for the flush, so nothing the
  // candidate starts can overlap it or inherit work of the call before. False: the gate failed (its error
  // is the gate's).
  bool flush_and_close(bool gated, call_result& res, double fill_ms) {
    const auto t0 = clock_type::now();
    struct charge {  // every way out of the flush is counted
      double& into;
      clock_type::time_point t0;
      ~charge() { into += ms_between(t0, clock_type::now()); }
    } counted{costs.flush_ms, t0};
    check_api(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    costs.add("sync", t0, clock_type::now());
    auto evict = [&] {
      if (!opt_.flush_cache) return;
      // Lines marked persisting survive an ordinary flush: while a carve-out for them exists (a candidate
      // made one), every call starts with none. Without a carve-out no line persists.
      size_t persisting = 0;
      if (cudaDeviceGetLimit(&persisting, cudaLimitPersistingL2CacheSize) == cudaSuccess && persisting > 0)
        cudaCtxResetPersistingL2Cache();
      cudaGetLastError();
      check_api(cudaMemsetAsync(m_.flush_buf.data_ptr(), static_cast<int>(++m_.flush_round & 0xff),
                                m_.flush_buf.nbytes(), m_.stream),
                "cudaMemsetAsync (L2 flush)");
    };
    if (gated) {
      const auto g0 = clock_type::now();
      if (!m_.gate->close(m_.stream, evict, fill_ms)) return false;
      costs.add("close", g0, clock_type::now());
      res.clocks.before_ms = std::max(0.0, m_.gate->before_ms());
      return true;
    }
    evict();
    check_api(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    return true;
  }

  // Calls are gated: the device is held while the host enqueues the call, so the events time the device's
  // work whatever the host's speed (eager LibTorch dispatch took 5 us in one evaluation and 21 us in the
  // next on the H200 machine; a cuDNN call can spend 0.2 ms on the host). The host's time in the call is
  // charged when it is the longer (charged_ms). Not gated: with benchmark.time_launch (the launch is timed,
  // KernelBench's convention), without a working gate, or after a call waited on the device inside its
  // launch.
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
        throw cuda_fault("timeout", "a kernel of the candidate was still running " +
                                        fmt_number(call_deadline_s) +
                                        " s after the call returned; the worker cannot stop it");
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  // One region, the same for every call of the candidate and the baselines: flush (outside the events),
  // gate, event, host clock, f(), event, open, wait for the stream (checked calls: with a deadline, and
  // `snapshot` copied into `snapshot_into` there, allocated by the caller before the region: a fresh device
  // allocation between the stream's end and the device-wide wait would be counted as the call's tail), wait
  // for the whole device. Errors: sticky ones throw.
  template <class F>
  call_result region(F&& f, bool checked, bool candidate, const at::Tensor* snapshot, const std::string& what,
                     at::Tensor snapshot_into = {}) {
    const auto t_region = clock_type::now();
    ++costs.regions;
    call_result res;
    // The candidate's first call is not gated: CUDA loads its kernels lazily at their first launch, which
    // waits on the device, and a held stream would make it wait for the gate's watchdog. Every later call,
    // checked or timed, is gated alike, so the gate's state tells the candidate nothing.
    bool gated = gating() && !(candidate && first_call_);
    const bool first = candidate && first_call_;
    if (candidate) first_call_ = false;
    // A checked call's stream gets the device first and a fill the rest until it is done (launch_gate): the
    // fill lasts twice the first call at most, so a call whose stream waits on its own side work ends.
    const double fill_ms = checked && candidate && snapshot ? std::max(1.0, 2 * first_call_ms_ + 0.5) : 0.0;
    if (!flush_and_close(gated, res, fill_ms)) {
      gate_off(m_.gate->error());
      gated = false;
      check_api(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    }
    check_api(cudaEventRecord(m_.ev0, m_.stream), "cudaEventRecord");
    int rc = -1;
    auto t0 = clock_type::now();
    if (candidate) candidate_running.store(true);
    try {
      rc = f();
    } catch (const std::exception& e) {
      res.error = what + " threw: " + e.what();
    } catch (...) {
      res.error = what + " threw a non-standard exception";
    }
    if (candidate) candidate_running.store(false);
    const auto t_return = clock_type::now();
    cudaError_t launch = cudaGetLastError();
    check_api(cudaEventRecord(m_.ev1, m_.stream), "cudaEventRecord");
    auto t_open = t0;
    res.filled = gated && m_.gate->filling();
    if (res.filled && snapshot && snapshot_into.defined()) {
      // Ordered on the stream before the fill ends: work the call left unordered with it has not run yet.
      res.at_stream_end = snapshot_into.copy_(*snapshot);
      m_.gate->call_done(m_.stream);
    }
    if (gated) {
      res.gate_forced = !m_.gate->open();
      t_open = clock_type::now();
      res.clocks.host_ms = ms_between(t0, t_return);
    }
    cudaError_t es = wait_stream(checked);
    auto t_stream = clock_type::now();
    if (es == cudaSuccess && snapshot && snapshot_into.defined() && !res.filled) {
      // Copied on the stream as it is now: what a consumer ordered on ctx->stream would read.
      res.at_stream_end = snapshot_into.copy_(*snapshot);
      es = cudaStreamSynchronize(m_.stream);
    }
    auto t_snap = clock_type::now();
    cudaError_t ed = cudaDeviceSynchronize();
    auto t_device = clock_type::now();
    costs.add("enqueue", t0, t_return);
    costs.add("open", t_return, t_open > t_return ? t_open : t_return);
    costs.add("to_stream", t_open > t_return ? t_open : t_return, t_stream);
    costs.add("snapshot", t_stream, t_snap);
    costs.add("to_idle", t_snap, t_device);
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
    if (first && res.ok) first_call_ms_ = ev_ms;
    costs.add("region_end", t_device, clock_type::now());
    costs.region_ms += ms_between(t_region, clock_type::now());
    return res;
  }

  // The candidate's call on a slot, checked or timed alike up to the wait. A checked call's snapshot buffer
  // is `snapshot_into`, allocated before it (see region).
  call_result call_candidate(device_set& set, bool checked, at::Tensor snapshot_into = {}) {
    auto in = views_of(set.inputs);
    cru_tensor o = view_of(set.out);
    call_result res;
    if (entry_.enter) entry_.enter();
    {
      std::optional<aten_watch> watch;
      if (entry_.watch_aten) watch.emplace();
      res = region([&] { return entry_.call(&ctx_, in.data(), static_cast<int32_t>(in.size()), &o, 1); },
                   checked, /*candidate=*/true, checked ? &set.out : nullptr,
                   entry_.watch_aten ? "crucible_forward" : "ModelNew.forward", std::move(snapshot_into));
      if (watch && aten_watch::ops() > 0) {
        if (reference_ops_ == 0) first_reference_op_ = aten_watch::first();
        reference_ops_ += aten_watch::ops();
      }
    }
    if (entry_.leave) entry_.leave();
    if (!res.ok && entry_.disguised_output)
      if (std::string d = entry_.disguised_output(); !d.empty()) add_disguised_output(r_, d);
    if (checked && res.gate_forced) ++forced_checked_;  // delayed, not mismeasured: checked calls are untimed
    const auto s0 = clock_type::now();
    check_state("after a call");
    costs.add("state", s0, clock_type::now());
    return res;
  }

  // Before the reference judges the candidate's output: the reference must still be the one the worker
  // built (a module beside the candidate in one interpreter could be changed by it). Said once.
  void guard_reference(const std::string& when) {
    if (!entry_.reference_changes || reference_changed_) return;
    const auto g0 = clock_type::now();
    const std::string changed = entry_.reference_changes();
    costs.add("reference_watch", g0, clock_type::now());
    if (changed.empty()) return;
    reference_changed_ = true;
    add_evidence(r_, evidence_kind::reference_changed,
                 "what the reference computes with was changed " + when + ": " + changed);
  }

  // The eager reference's output, when it copies its result as the candidate must (else none).
  const cru_tensor* eager_out() {
    if (!eager_out_.defined()) return nullptr;
    eager_out_view_ = view_of(eager_out_);
    return &eager_out_view_;
  }

  void check_state(const std::string& when) {
    const std::string changed = state_changes(state_, capture_state(m_.stream, m_.blas));
    if (changed.empty()) return;
    add_evidence(r_, evidence_kind::device_state_changed,
                 "the candidate left " + changed + " changed " + when +
                     " (restored by the worker): state the baseline and the next calls depend on");
    restore_state(state_, m_.stream, m_.blas);
  }

  call_result call_eager(const std::vector<at::Tensor>& inputs) {
    auto in = views_of(inputs);
    return region(
        [&] {
          ref_.run_views(in, eager_out(), m_.device);
          return 0;
        },
        /*checked=*/false, /*candidate=*/false, nullptr, "the eager reference");
  }

  call_result call_more(baseline b, const std::vector<at::Tensor>& inputs) {
    auto in = views_of(inputs);
    return region(
        [&] {
          entry_.run_baseline(b, in, eager_out());
          return 0;
        },
        /*checked=*/false, /*candidate=*/false, nullptr, baseline_name(b));
  }

  call_result call_graph(device_set& set) {
    return region(
        [&] {
          set.graph->replay();
          return 0;
        },
        /*checked=*/false, /*candidate=*/false, nullptr, "the CUDA-graph reference");
  }

  // Counts the candidate's calls and those whose device tail says work outlived its stream; finish()
  // decides.
  void note_outside(const call_result& c) {
    ++calls_;
    if (busy_before(c.clocks, check_)) {
      ++befores_;
      max_before_ms_ = std::max(max_before_ms_, c.clocks.before_ms - check_.null_before_ms);
    }
    // After a filled call the device still has the fill's last slice and whatever the fill held back: the
    // output read at the stream's end judges that call, not its tail.
    if (c.filled) {
      ++filled_calls_;
      return;
    }
    if (!outside_stream(c.clocks, check_)) return;
    ++tails_;
    max_tail_ms_ = std::max(max_tail_ms_, c.clocks.device_tail_ms);
  }

  void check_inputs(const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& pristine,
                    const std::string& when) {
    for (size_t i = 0; i < inputs.size(); ++i)
      if (!same_bits(inputs[i], pristine[i])) {
        const std::string& name = i < req_.task.inputs.size() ? req_.task.inputs[i].name : std::to_string(i);
        add_evidence(r_, evidence_kind::input_mutated,
                     "input '" + name + "' differs from its pristine copy " + when, name);
      }
  }

  // The wall time of an empty region on this worker (the flush, events, both waits, no work), and its
  // device-wide wait with nothing left to run.
  void calibrate_null_region() {
    std::vector<double> walls, tails, befores;
    for (int i = 0; i < 11; ++i) {
      auto c = region([] { return 0; }, false, false, nullptr, "an empty region");
      walls.push_back(c.clocks.wall_ms);
      tails.push_back(c.clocks.device_tail_ms);
      befores.push_back(c.clocks.before_ms);
    }
    check_.null_wall_ms = median(walls);
    check_.null_tail_ms = median(tails);
    check_.null_before_ms = median(befores);
  }

  const eval_request& req_;
  const eval_options& opt_;
  const reference_model& ref_;
  candidate_entry entry_;
  at::Tensor eager_out_;  ///< where the eager reference copies its result (copy_eager_output)
  cru_tensor eager_out_view_{};
  bool reference_changed_ = false;
  cuda_evaluator::impl& m_;
  bench_result& r_;
  cru_context ctx_{};
  at::Tensor workspace_;
  std::vector<device_set> slots_;
  double atol_ = 0, rtol_ = 0;
  clock_check check_;
  std::vector<call_clocks> bucket_clocks_;
  int calls_ = 0, tails_ = 0;  // candidate calls, and those with a device tail
  double max_tail_ms_ = 0;
  int baselines_ = 0, busy_baselines_ = 0;  // timed baseline calls, and those with other work around them
  struct charges {
    std::vector<double> values;
    double sum = 0.0;
    void add(double x) { values.push_back(x), sum += x; }
    size_t n() const { return values.size(); }
    double mean() const { return values.empty() ? 0.0 : sum / static_cast<double>(values.size()); }
  };
  struct {
    charges candidate, eager;
  } beyond_events_;                 // charged_ms less the events (or the host's time), per timed call
  double last_extra_ms_ = 0;        // the last timed call's, for the protocol (device_backend::last_extra_ms)
  int leads_ = 0, busy_leads_ = 0;  // empty regions before timed candidate calls, and busy ones among them
  double max_busy_lead_ms_ = 0;
  int befores_ = 0;  // candidate calls before which the device was busy with something else
  double max_before_ms_ = 0;
  bool gate_off_ = false;  // launches timed with the calls for the rest of the evaluation
  bool first_call_ = true;
  double first_call_ms_ = 0;  // the candidate's first call, by its events (not gated)
  int filled_calls_ = 0;      // checked calls whose stream had the device first
  int forced_checked_ = 0;    // checked calls the gate's watchdog had to open
  bool right_after_device_ = true;
  bool leaked_ = false;
  int64_t reference_ops_ = 0;
  std::string first_reference_op_;
  device_state state_;  ///< the worker's, which every call must leave as it found it
};

// A KernelBench module's evaluation runs on impl::blocking_holder's stream (made on first use), the worker's
// own stream back afterwards.
class stream_swap {
 public:
  explicit stream_swap(cuda_evaluator::impl& m) : m_(m), was_(m.stream), was_holder_(m.stream_holder) {}
  ~stream_swap() {
    if (!on_) return;
    m_.stream = was_;
    m_.stream_holder = was_holder_;
    cublasSetStream(m_.blas, m_.stream);
  }
  stream_swap(const stream_swap&) = delete;
  stream_swap& operator=(const stream_swap&) = delete;
  void to_blocking() {
    if (!m_.blocking_holder) {
      int least = 0, greatest = 0;
      check_api(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange");
      cudaStream_t s = nullptr;
      check_api(cudaStreamCreateWithPriority(&s, cudaStreamDefault, greatest),
                "cudaStreamCreateWithPriority");
      m_.blocking_holder = c10::cuda::getStreamFromExternal(s, static_cast<c10::DeviceIndex>(m_.device));
    }
    m_.stream = m_.blocking_holder->stream();
    m_.stream_holder = m_.blocking_holder;
    cublasSetStream(m_.blas, m_.stream);
    on_ = true;
  }

 private:
  cuda_evaluator::impl& m_;
  cudaStream_t was_;
  std::optional<c10::cuda::CUDAStream> was_holder_;
  bool on_ = false;
};

#ifdef CRUCIBLE_WITH_PYTHON
// torch.utils.cpp_extension builds of one evaluation, in a folder of its own removed with it: a build
// another candidate left under the same extension name is never loaded in its place.
class extensions_dir {
 public:
  extensions_dir() {
    static int made = 0;
    std::error_code ec;
    auto tmp = std::filesystem::temp_directory_path(ec);
    if (ec) tmp = "/tmp";
    path_ = tmp / ("crucible-extensions-" + std::to_string(getpid()) + "-" + std::to_string(made++));
    std::filesystem::create_directories(path_, ec);
    setenv("TORCH_EXTENSIONS_DIR", path_.c_str(), 1);
  }
  ~extensions_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  extensions_dir(const extensions_dir&) = delete;
  extensions_dir& operator=(const extensions_dir&) = delete;

 private:
  std::filesystem::path path_;
};

// torch.compile's name for the mode of a compiled baseline.
const char* torch_compile_mode(baseline b) {
  return b == baseline::compile ? "default" : "reduce-overhead";
}

// The reference's torch.compile forms as baselines (benchmark.compile_baselines), compiled before the
// candidate loads and before the reference's fingerprint is taken. A form that does not compile, or computes
// something else, is left out with a note; the evaluation goes on with the others.
void compile_baselines(kernelbench_reference& ref, int device, candidate_entry& entry, bench_result& r) {
  std::string made;
  for (baseline b : {baseline::compile, baseline::compile_reduce_overhead}) {
    const auto c0 = clock_type::now();
    const std::string err = ref.compile(torch_compile_mode(b));
    if (!err.empty()) {
      r.notes.push_back(std::string("baseline unavailable: ") + baseline_name(b) + ": " + err);
      continue;
    }
    entry.more_baselines.push_back(b);
    made += std::string(made.empty() ? "" : ", ") + baseline_name(b) + " " +
            fmt_number(ms_between(c0, clock_type::now()) / 1000.0) + " s";
  }
  if (!made.empty()) r.notes.push_back("baselines compiled: " + made);
  if (entry.more_baselines.empty()) return;
  entry.run_baseline = [&ref, device](baseline b, const std::vector<cru_tensor>& in, const cru_tensor* out) {
    ref.run_compiled(torch_compile_mode(b), in, out, device);
  };
}
#endif

// "; parts: sync 1.2, close 3.4, ...", for the phases_ms note.
std::string parts_note(const std::map<std::string, double>& parts) {
  std::string s = "; parts:";
  for (const auto& [k, v] : parts) s += " " + k + " " + fmt_number(v) + ",";
  if (!parts.empty()) s.pop_back();
  return s;
}

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
  const bool kernelbench = !req.task.module.empty();
  double forward_peak = 0;  ///< a KernelBench reference's first forward pass, above what stays (bytes)
  stream_swap swap(m);
#ifdef CRUCIBLE_WITH_PYTHON
  std::unique_ptr<kernelbench_reference> kb_ref;
  std::unique_ptr<extensions_dir> kb_builds;
  std::unique_ptr<kernelbench_candidate> kb_candidate;  // released before the reference it runs beside
#endif
  auto lost = [&](const std::string& status, const std::string& what) {
    m.must_exit = true;
    lib.leak();  // its kernels may still be resident; the process is about to end anyway
    r.status = status;
    r.error = what + " (worker retired)";
  };
  try {
    if (kernelbench) swap.to_blocking();
    c10::cuda::CUDAStreamGuard guard(*m.stream_holder);
    // A stream left capturing (by anything) fails every later call: no evaluation starts on one.
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(m.stream, &capturing) == cudaSuccess &&
        capturing != cudaStreamCaptureStatusNone)
      throw cuda_fault("error", "the worker's stream was left in capture mode");
    const reference_model* ref = nullptr;
    candidate_entry entry;
    if (kernelbench) {
#ifdef CRUCIBLE_WITH_PYTHON
      // The module's Model, built anew for this evaluation in the worker's interpreter, and fingerprinted
      // before any of the candidate's code runs beside it.
      // The allocator's peak over building the reference (one forward pass on drawn inputs), above what
      // stays allocated after (its weights): what a forward call needs, inputs and output included.
      c10::cuda::CUDACachingAllocator::resetPeakStats(m.device);
      auto created = kernelbench_reference::create(req.task, m.device);
      {
        const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(m.device);
        const auto& allocated = stats.allocated_bytes[0];  // StatType::AGGREGATE in every LibTorch version
        forward_peak = static_cast<double>(allocated.peak - allocated.current);
      }
      if (!created) {
        r.status = "error";
        r.error = "task '" + req.task.name + "' rejected by the reference: " + created.message();
        return done();
      }
      kb_ref = std::move(*created);
      if (req.options.compile_baselines && req.options.timing) compile_baselines(*kb_ref, m.device, entry, r);
      if (std::string w = kb_ref->watch(); !w.empty()) {
        r.status = "error";
        r.error = w;
        return done();
      }
      // What a module leaves in the interpreter (imports, bindings, threads) must not reach the next
      // candidate: each has a worker of its own, or a process forked for it that ends with it.
      if (!m.single_use) {
        m.must_exit = true;
        r.notes.push_back(
            "worker retired after this evaluation: each KernelBench candidate gets a fresh interpreter");
      }
      kb_builds = std::make_unique<extensions_dir>();
      auto cand = kernelbench_candidate::load(req.artifact, req.task, m.device);
      if (!cand) {
        r.status = "load_error";
        r.error = cand.message();
        return done();
      }
      kb_candidate = std::move(*cand);
      if (std::string f = kb_candidate->own_flags(); !f.empty())
        r.notes.push_back("flags: the candidate set " + f + " for itself, in force during its calls only");
      kernelbench_candidate* c = kb_candidate.get();
      entry.call = [c](const cru_context*, const cru_tensor* in, int32_t n, cru_tensor* out, int32_t) {
        return c->call(in, n, out);
      };
      entry.enter = [c] { c->enter(); };
      entry.leave = [c] { c->leave(); };
      entry.watch_aten = false;
      entry.copy_eager_output = true;
      entry.python_module = true;
      kernelbench_reference* kr = kb_ref.get();
      entry.reference_changes = [kr] { return kr->changes(); };
      entry.disguised_output = [c] { return c->take_disguise(); };
      ref = kb_ref.get();
#else
      r.status = "error";
      r.error =
          "a KernelBench task, and this worker was built without Python (python3-dev, pybind11-dev and "
          "torch's Python package at configure time)";
      return done();
#endif
    } else {
      auto chain = m.references.get(req.task);
      if (!chain) {
        r.status = "error";
        r.error = "task '" + req.task.name + "' rejected by the reference: " + chain.message();
        return done();
      }
      if (std::string err = load_candidate(lib, req.artifact, m.loads, r); !err.empty()) {
        r.status = "load_error";
        r.error = err;
        return done();
      }
      ref = *chain;
      entry.call = lib.fn();
    }
    auto t_load = clock_type::now();
    relieve_memory_pressure();
    // Static import features (load_candidate notes them) raise scrutiny; they decide nothing alone.
    const bool scrutiny = std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) {
      return n.rfind("static feature ", 0) == 0;
    });
    protocol_times s;
    cuda_backend::backend_costs costs;
    clock_type::time_point t_run, t_ran;
    double planned = 0;
    auto fitted = options_that_fit(req, *ref, entry.python_module, forward_peak, r.notes, &planned);
    if (!fitted) {
      r.status = "error";
      r.error = fitted.message();
      return done();
    }
    std::optional<eval_request> sized;  // the request with the options that fit, when they differ
    if (fitted->seeds != req.options.seeds || fitted->input_sets != req.options.input_sets) {
      sized = req;
      sized->options = *fitted;
    }
    const eval_request& run_req = sized ? *sized : req;
    {
      // What the evaluation holds at most beside what was allocated before it (the reference's weights, the
      // worker's own), against the plan: the room the plan keeps for the calls is a measurement (on ReLU)
      // that every evaluation re-checks this way.
      c10::cuda::CUDACachingAllocator::resetPeakStats(m.device);
      const int64_t held_before =
          c10::cuda::CUDACachingAllocator::getDeviceStats(m.device).allocated_bytes[0].current;
      cuda_backend backend(run_req, *ref, std::move(entry), m, r);
      evaluation_protocol protocol(run_req, backend, scrutiny, r);
      t_run = clock_type::now();
      protocol.run();
#ifdef CRUCIBLE_WITH_PYTHON
      // A fresh draw on the CPU costs the host what a draw on the device does not, right before the
      // candidate's call: said, as the reason a trial's fill is slow.
      if (kb_ref && !kb_ref->draws_moved().empty())
        r.notes.push_back(
            "inputs: get_inputs() drew on the CPU from a point of this evaluation on: it raised "
            "on the device (" +
            kb_ref->draws_moved() + ")");
#endif
      if (planned > 0) {
        const auto peak = c10::cuda::CUDACachingAllocator::getDeviceStats(m.device).allocated_bytes[0].peak;
        const double giga = static_cast<double>(int64_t{1} << 30);
        r.notes.push_back("memory: the evaluation held at most " +
                          fmt_number(static_cast<double>(peak - held_before) / giga) +
                          " GiB on the device, planned " + fmt_number(planned / giga) + " GiB");
      }
      if (backend.leaked()) lib.leak();
      s = protocol.times();
      costs = backend.costs;
      t_ran = clock_type::now();
      costs.add("protocol", t_run, t_ran);
    }
    costs.add("teardown", t_ran, clock_type::now());  // the slots, graphs and workspace freed
    costs.add("before_protocol", t_load, t_run);
    costs.add("evaluate", t0, clock_type::now());
    r.notes.push_back("phases_ms: setup " + fmt_number(ms_between(t0, t_load)) + ", correctness " +
                      fmt_number(s.correctness) + ", timing " + fmt_number(s.timing) + " (fresh values " +
                      fmt_number(s.fill) + ", checks " + fmt_number(s.check) + "), post_timing " +
                      fmt_number(s.post_timing) + " (memo probe " + fmt_number(s.memo) + "); calls " +
                      std::to_string(costs.regions) + ", regions " + fmt_number(costs.region_ms) +
                      " (flush " + fmt_number(costs.flush_ms) + "), settle " + fmt_number(costs.settle_ms) +
                      ", slots " + fmt_number(costs.alloc_ms) + parts_note(costs.parts));
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
