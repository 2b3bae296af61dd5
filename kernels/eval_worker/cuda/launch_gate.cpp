#include "kernels/eval_worker/cuda/launch_gate.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

namespace crucible::kernels {

namespace {

// The stamp writes the device's clock where the host reads it. In the hold, one thread per block says it is
// resident (the clock in since[block], then its round in seen[block]) and polls the word (the others wait at
// the barrier, issuing nothing) until it reaches the round; compared as a signed difference, so the rounds
// may wrap. The fill's blocks each take an SM's slot for a slice (or until the call's stream is done, or the
// bound), then leave it, so the call's stream, of higher priority, gets every slot it asks for within a slice
// and the fill the rest. PTX, so the worker needs no device compiler: the driver compiles it at load.
constexpr const char* hold_ptx = R"(
.version 6.3
.target sm_70
.address_size 64

.visible .entry crucible_gate_stamp(.param .u64 at)
{
  .reg .b64 %rd<2>;

  ld.param.u64 %rd0, [at];
  mov.u64 %rd1, %globaltimer;
  st.volatile.u64 [%rd0], %rd1;
  membar.sys;
  ret;
}

.visible .entry crucible_gate_hold(.param .u64 word, .param .u32 round, .param .u64 seen, .param .u64 since)
{
  .reg .pred %p<2>;
  .reg .b32 %r<5>;
  .reg .b64 %rd<8>;

  mov.u32 %r0, %tid.x;
  setp.ne.u32 %p0, %r0, 0;
  @%p0 bra DONE;
  ld.param.u64 %rd0, [word];
  ld.param.u32 %r1, [round];
  ld.param.u64 %rd1, [seen];
  ld.param.u64 %rd4, [since];
  mov.u32 %r4, %ctaid.x;
  mul.wide.u32 %rd2, %r4, 4;
  add.u64 %rd3, %rd1, %rd2;
  mul.wide.u32 %rd5, %r4, 8;
  add.u64 %rd6, %rd4, %rd5;
  mov.u64 %rd7, %globaltimer;
  st.volatile.u64 [%rd6], %rd7;
  membar.sys;
  st.volatile.u32 [%rd3], %r1;
  membar.sys;
SPIN:
  ld.volatile.u32 %r2, [%rd0];
  sub.s32 %r3, %r2, %r1;
  setp.ge.s32 %p1, %r3, 0;
  @%p1 bra DONE;
  nanosleep.u32 500;
  bra SPIN;
DONE:
  bar.sync 0;
  ret;
}

.visible .entry crucible_gate_pass(.param .u64 word, .param .u32 round)
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<1>;

  ld.param.u64 %rd0, [word];
  ld.param.u32 %r1, [round];
PSPIN:
  ld.volatile.u32 %r2, [%rd0];
  sub.s32 %r3, %r2, %r1;
  setp.ge.s32 %p1, %r3, 0;
  @%p1 bra PDONE;
  nanosleep.u32 200;
  bra PSPIN;
PDONE:
  ret;
}

.visible .entry crucible_gate_fill(.param .u64 done, .param .u32 round, .param .u64 until, .param .u64 slice)
{
  .reg .pred %p<3>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<6>;

  mov.u32 %r0, %tid.x;
  setp.ne.u32 %p0, %r0, 0;
  @%p0 bra FDONE;
  ld.param.u64 %rd0, [done];
  ld.param.u32 %r1, [round];
  ld.param.u64 %rd1, [until];
  ld.param.u64 %rd2, [slice];
  mov.u64 %rd3, %globaltimer;
  add.u64 %rd4, %rd3, %rd2;
  min.u64 %rd4, %rd4, %rd1;
FSPIN:
  ld.volatile.global.u32 %r2, [%rd0];
  sub.s32 %r3, %r2, %r1;
  setp.ge.s32 %p1, %r3, 0;
  @%p1 bra FDONE;
  mov.u64 %rd5, %globaltimer;
  setp.ge.u64 %p2, %rd5, %rd4;
  @%p2 bra FDONE;
  nanosleep.u32 200;
  bra FSPIN;
FDONE:
  bar.sync 0;
  ret;
}
)";

std::string driver_error(CUresult r) {
  const char* name = nullptr;
  cuGetErrorName(r, &name);
  return name ? name : "unknown";
}

}  // namespace

launch_gate::launch_gate(std::chrono::milliseconds deadline) : deadline_(deadline) {
  void* host = nullptr;
  if (cudaHostAlloc(&host, sizeof(uint32_t), cudaHostAllocMapped) != cudaSuccess) {
    cudaGetLastError();
    error_ = "no host-mapped memory for the launch gate";
    return;
  }
  word_ = static_cast<volatile uint32_t*>(host);
  *word_ = 0;
  if (cudaHostGetDevicePointer(&word_device_, host, 0) != cudaSuccess) {
    cudaGetLastError();
    error_ = "the launch gate's word is not visible to the device";
    return;
  }
  load_hold_kernel();
  watchdog_ = std::thread([this] { watch(); });
}

// The hold kernel fills an SM when its resident blocks use every thread slot: nothing else launched while
// it runs gets a block onto the device.
void launch_gate::load_hold_kernel() {
  auto fail = [&](const std::string& why) {
    scope_note_ = "the launch gate holds only the stream (" + why + ")";
    hold_ = nullptr;
  };
  // For measuring what filling the SMs costs, side by side with the older gate (bench/gpu_verifier.sh).
  if (const char* scope = std::getenv("CRUCIBLE_LAUNCH_GATE"); scope && std::string(scope) == "stream")
    return fail("CRUCIBLE_LAUNCH_GATE=stream");
  CUdevice dev = 0;
  if (CUresult r = cuCtxGetDevice(&dev); r != CUDA_SUCCESS)
    return fail("no current context: " + driver_error(r));
  if (CUresult r = cuModuleLoadData(&module_, hold_ptx); r != CUDA_SUCCESS)
    return fail("its kernel did not load: " + driver_error(r));
  if (CUresult r = cuModuleGetFunction(&hold_, module_, "crucible_gate_hold"); r != CUDA_SUCCESS)
    return fail("its kernel is missing: " + driver_error(r));
  if (CUresult r = cuModuleGetFunction(&stamp_, module_, "crucible_gate_stamp"); r != CUDA_SUCCESS)
    return fail("its clock kernel is missing: " + driver_error(r));
  // For measuring the stream memory wait this kernel replaced, side by side (bench/gpu_verifier.sh).
  const char* scope = std::getenv("CRUCIBLE_LAUNCH_GATE");
  if (!(scope && std::string(scope) == "wait") &&
      cuModuleGetFunction(&pass_, module_, "crucible_gate_pass") != CUDA_SUCCESS)
    pass_ = nullptr;
  if (cuModuleGetFunction(&fill_, module_, "crucible_gate_fill") != CUDA_SUCCESS) fill_ = nullptr;
  int sms = 0, per_sm = 0, per_block = 0, resident = 0;
  cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
  cuDeviceGetAttribute(&per_sm, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, dev);
  cuDeviceGetAttribute(&per_block, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, dev);
  int threads = per_block;
  while (threads > 32 && per_sm % threads != 0) threads /= 2;
  if (CUresult r = cuOccupancyMaxActiveBlocksPerMultiprocessor(&resident, hold_, threads, 0);
      r != CUDA_SUCCESS)
    return fail("no occupancy figure: " + driver_error(r));
  if (sms <= 0 || resident * threads < per_sm)
    return fail(std::to_string(resident) + " blocks of " + std::to_string(threads) +
                " threads per SM leave room");
  // One allocation: the stamp's clock, then each block's clock, then each block's round.
  void* flags = nullptr;
  const size_t blocks = static_cast<size_t>(sms) * static_cast<size_t>(resident);
  const size_t bytes = (1 + blocks) * sizeof(uint64_t) + blocks * sizeof(uint32_t);
  if (cudaHostAlloc(&flags, bytes, cudaHostAllocMapped) != cudaSuccess ||
      cudaHostGetDevicePointer(&flags_device_, flags, 0) != cudaSuccess) {
    cudaGetLastError();
    if (flags) cudaFreeHost(flags);
    return fail("no host-mapped memory for its residency flags");
  }
  flags_ = flags;
  std::memset(flags, 0, bytes);
  stamp_at_ = static_cast<volatile uint64_t*>(flags);
  since_ = stamp_at_ + 1;
  seen_ = reinterpret_cast<volatile uint32_t*>(const_cast<uint64_t*>(since_ + blocks));
  if (cudaEventCreateWithFlags(&flushed_, cudaEventDisableTiming) != cudaSuccess) {
    cudaGetLastError();
    flushed_ = nullptr;
    return fail("no event for it");
  }
  int least = 0, greatest = 0;
  if (cudaDeviceGetStreamPriorityRange(&least, &greatest) != cudaSuccess ||
      cudaStreamCreateWithPriority(&hold_stream_, cudaStreamNonBlocking, greatest) != cudaSuccess) {
    cudaGetLastError();
    hold_stream_ = nullptr;
    return fail("no stream for it");
  }
  threads_ = static_cast<unsigned>(threads);
  blocks_ = static_cast<unsigned>(blocks);
  // The fill needs a priority below the call's stream and above the default one candidates' streams get.
  if (fill_ && least != greatest &&
      cudaStreamCreateWithPriority(&fill_stream_, cudaStreamNonBlocking, greatest + 1) == cudaSuccess &&
      cudaMalloc(&done_device_, sizeof(uint32_t)) == cudaSuccess &&
      cudaMemset(done_device_, 0, sizeof(uint32_t)) == cudaSuccess) {
    cudaDeviceSynchronize();
  } else {
    cudaGetLastError();
    if (fill_stream_) cudaStreamDestroy(fill_stream_);
    fill_stream_ = nullptr;
    fill_ = nullptr;
  }
}

launch_gate::~launch_gate() {
  if (watchdog_.joinable()) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    watchdog_.join();
  }
  if (word_) {
    release();  // nothing may stay waiting on a word about to be freed
    cudaDeviceSynchronize();
    if (module_) cuModuleUnload(module_);
    if (hold_stream_) cudaStreamDestroy(hold_stream_);
    if (fill_stream_) cudaStreamDestroy(fill_stream_);
    if (done_device_) cudaFree(done_device_);
    if (flushed_) cudaEventDestroy(flushed_);
    if (flags_) cudaFreeHost(flags_);
    cudaFreeHost(const_cast<uint32_t*>(word_));
  }
}

void launch_gate::release() {
  release_round(round_);
}

void launch_gate::release_round(uint32_t round) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  *word_ = round;
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

// Until every block of the hold has said so: on an idle device that is the launch's latency (microseconds).
// Work that still occupies an SM delays it; after the bound the call goes ahead and the caller's clock of
// the time before the call shows the delay.
bool launch_gate::wait_resident(uint32_t round) {
  constexpr std::chrono::milliseconds bound{20};
  const auto until = std::chrono::steady_clock::now() + bound;
  for (unsigned i = 0; i < blocks_;) {
    if (static_cast<int32_t>(seen_[i] - round) >= 0) {
      ++i;
      continue;
    }
    if (std::chrono::steady_clock::now() > until) return false;
  }
  std::atomic_thread_fence(std::memory_order_acquire);
  return true;
}

bool launch_gate::close(cudaStream_t stream, const std::function<void()>& flush, double fill_ms) {
  if (!error_.empty()) return false;
  std::lock_guard<std::mutex> lk(mu_);
  uint32_t next = round_ + 1;
  before_ms_ = -1;
  filling_ = false;
  const auto t0 = std::chrono::steady_clock::now();
  auto refused = [&](const char* what, CUresult r) {
    error_ = std::string("the device refused the launch gate's ") + what + " (" + driver_error(r) + ")";
    release_round(next);  // a hold already launched must not spin until the watchdog
    return false;
  };
  if (hold_) {
    // stamp, flush, then the hold as soon as the flush is done: from the stamp on the device has nothing
    // else of the worker's to do, and no moment of it is idle, until the call.
    void* at = flags_device_;
    void* stamp_args[] = {&at};
    if (CUresult r = cuLaunchKernel(stamp_, 1, 1, 1, 1, 1, 1, 0, reinterpret_cast<CUstream>(stream),
                                    stamp_args, nullptr);
        r != CUDA_SUCCESS)
      return refused("clock kernel", r);
    flush();
    if (cudaEventRecord(flushed_, stream) != cudaSuccess ||
        cudaStreamWaitEvent(hold_stream_, flushed_, 0) != cudaSuccess) {
      cudaGetLastError();
      error_ = "the launch gate could not order its hold after the flush";
      return false;
    }
    void* word = word_device_;
    void* seen = static_cast<char*>(flags_device_) + (1 + blocks_) * sizeof(uint64_t);
    void* since = static_cast<char*>(flags_device_) + sizeof(uint64_t);
    void* args[] = {&word, &next, &seen, &since};
    if (CUresult r = cuLaunchKernel(hold_, blocks_, 1, 1, threads_, 1, 1, 0,
                                    reinterpret_cast<CUstream>(hold_stream_), args, nullptr);
        r != CUDA_SUCCESS)
      return refused("hold kernel", r);
  } else {
    flush();
  }
  // The stream waits for the word either in a one-thread kernel of its own, launched once the hold occupies
  // every SM (so it cannot take a slot before the hold has them all, and gets one first when they leave; the
  // fill, launched the same way, then needs no wait of its own), or in a stream memory wait
  // (CRUCIBLE_LAUNCH_GATE=wait, or no hold). Either way an empty gated region took 0.26-0.27 ms from the
  // opening to an idle device on an H200; the kernel did not shorten it.
  if (!hold_ || !pass_) {
    if (CUresult r =
            cuStreamWaitValue32(reinterpret_cast<CUstream>(stream),
                                reinterpret_cast<CUdeviceptr>(word_device_), next, CU_STREAM_WAIT_VALUE_GEQ);
        r != CUDA_SUCCESS)
      return refused("stream memory wait", r);
  }
  if (hold_) {
    const bool resident = wait_resident(next);
    if (pass_) {
      void* word = word_device_;
      void* args[] = {&word, &next};
      if (CUresult r =
              cuLaunchKernel(pass_, 1, 1, 1, 1, 1, 1, 0, reinterpret_cast<CUstream>(stream), args, nullptr);
          r != CUDA_SUCCESS)
        return refused("pass kernel", r);
    }
    if (resident) {
      uint64_t last = 0;
      for (unsigned i = 0; i < blocks_; ++i) last = std::max(last, static_cast<uint64_t>(since_[i]));
      const uint64_t from = *stamp_at_;
      before_ms_ = last > from ? static_cast<double>(last - from) / 1e6 : 0.0;
      if (fill_ms > 0 && fill_) filling_ = start_fill(next, last, fill_ms);
    } else {  // something else held SMs all that time: at least that long
      before_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }
  }
  round_ = next;
  armed_ = true;
  fired_ = false;
  due_ = std::chrono::steady_clock::now() + deadline_;
  cv_.notify_all();
  return true;
}

// Pending behind the same word as the call's stream, so it takes the SMs the call leaves when the gate opens,
// before anything of lower priority; it ends at the call stream's done mark or `fill_ms` after the hold began
// (device clock `from`), whichever is first.
bool launch_gate::start_fill(uint32_t round, uint64_t from, double fill_ms) {
  constexpr uint64_t slice_ns = 5000;
  const uint64_t bound_ns = static_cast<uint64_t>(fill_ms * 1e6);
  const uint64_t waves = std::max<uint64_t>(1, bound_ns / slice_ns + 1);
  const uint64_t blocks = std::min<uint64_t>(uint64_t{blocks_} * waves, uint64_t{1} << 24);
  void* done = done_device_;
  uint64_t until = from + bound_ns, slice = slice_ns;
  void* args[] = {&done, &round, &until, &slice};
  // Launched while the hold has every SM, the fill needs no wait of its own: it gets the slots the call's
  // stream leaves as soon as the hold's blocks do (a stream memory wait would hand them to lower-priority
  // work for its latency first).
  return (pass_ || cuStreamWaitValue32(reinterpret_cast<CUstream>(fill_stream_),
                                       reinterpret_cast<CUdeviceptr>(word_device_), round,
                                       CU_STREAM_WAIT_VALUE_GEQ) == CUDA_SUCCESS) &&
         cuLaunchKernel(fill_, static_cast<unsigned>(blocks), 1, 1, threads_, 1, 1, 0,
                        reinterpret_cast<CUstream>(fill_stream_), args, nullptr) == CUDA_SUCCESS;
}

void launch_gate::call_done(cudaStream_t stream) {
  std::lock_guard<std::mutex> lk(mu_);
  if (!filling_) return;
  cuStreamWriteValue32(reinterpret_cast<CUstream>(stream), reinterpret_cast<CUdeviceptr>(done_device_),
                       round_, CU_STREAM_WRITE_VALUE_DEFAULT);
}

bool launch_gate::open() {
  std::lock_guard<std::mutex> lk(mu_);
  if (armed_) {
    release();
    armed_ = false;
  }
  return !fired_;
}

void launch_gate::watch() {
  std::unique_lock<std::mutex> lk(mu_);
  while (!stop_) {
    if (!armed_) {
      cv_.wait(lk);
      continue;
    }
    if (cv_.wait_until(lk, due_) == std::cv_status::timeout && armed_ &&
        std::chrono::steady_clock::now() >= due_) {
      release();
      armed_ = false;
      fired_ = true;
    }
  }
}

}  // namespace crucible::kernels
