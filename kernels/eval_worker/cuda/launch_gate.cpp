#include "kernels/eval_worker/cuda/launch_gate.hpp"

#include <atomic>
#include <cstdlib>

namespace crucible::kernels {

namespace {

// One thread per block polls the word (the others wait at the barrier, issuing nothing) until it reaches
// the round; compared as a signed difference, so the rounds may wrap. PTX, so the worker needs no device
// compiler: the driver compiles it for the device at load.
constexpr const char* hold_ptx = R"(
.version 6.3
.target sm_70
.address_size 64

.visible .entry crucible_gate_hold(.param .u64 word, .param .u32 round)
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<1>;

  mov.u32 %r0, %tid.x;
  setp.ne.u32 %p0, %r0, 0;
  @%p0 bra DONE;
  ld.param.u64 %rd0, [word];
  ld.param.u32 %r1, [round];
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
  threads_ = static_cast<unsigned>(threads);
  blocks_ = static_cast<unsigned>(sms * resident);
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
    cudaFreeHost(const_cast<uint32_t*>(word_));
  }
}

void launch_gate::release() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  *word_ = round_;
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

bool launch_gate::close(cudaStream_t stream) {
  if (!error_.empty()) return false;
  std::lock_guard<std::mutex> lk(mu_);
  uint32_t next = round_ + 1;
  CUresult r = CUDA_SUCCESS;
  if (hold_) {
    void* word = word_device_;
    void* args[] = {&word, &next};
    r = cuLaunchKernel(hold_, blocks_, 1, 1, threads_, 1, 1, 0, reinterpret_cast<CUstream>(stream), args,
                       nullptr);
  } else {
    r = cuStreamWaitValue32(reinterpret_cast<CUstream>(stream), reinterpret_cast<CUdeviceptr>(word_device_),
                            next, CU_STREAM_WAIT_VALUE_GEQ);
  }
  if (r != CUDA_SUCCESS) {
    error_ = std::string("the device refused the launch gate's ") +
             (hold_ ? "hold kernel" : "stream memory wait") + " (" + driver_error(r) + ")";
    return false;
  }
  round_ = next;
  armed_ = true;
  fired_ = false;
  due_ = std::chrono::steady_clock::now() + deadline_;
  cv_.notify_all();
  return true;
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
