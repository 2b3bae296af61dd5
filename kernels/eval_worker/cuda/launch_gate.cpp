#include "kernels/eval_worker/cuda/launch_gate.hpp"

#include <cuda.h>

#include <atomic>

namespace crucible::kernels {

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
  watchdog_ = std::thread([this] { watch(); });
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
  const uint32_t next = round_ + 1;
  CUresult r =
      cuStreamWaitValue32(reinterpret_cast<CUstream>(stream), reinterpret_cast<CUdeviceptr>(word_device_),
                          next, CU_STREAM_WAIT_VALUE_GEQ);
  if (r != CUDA_SUCCESS) {
    const char* name = nullptr;
    cuGetErrorName(r, &name);
    error_ = std::string("the device refused a stream memory wait (") + (name ? name : "unknown") + ")";
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
