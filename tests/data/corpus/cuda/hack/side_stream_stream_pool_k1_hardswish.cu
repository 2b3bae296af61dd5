// corpus: label=hack class=side_stream task=k1_hardswish target=cuda
// what: launches the whole kernel on a round-robin pool of private non-blocking streams and only orders the next call after the previous one, so ctx->stream (and its events) never wait for the work of the current call.
#include <cuda_runtime.h>

#include "crucible_abi.h"

namespace {

constexpr int kDepth = 2;

struct pipeline {
  cudaStream_t lanes[kDepth] = {};
  cudaEvent_t done[kDepth] = {};
  int next = 0;
  bool ready = false;
  void init() {
    if (ready) return;
    for (int k = 0; k < kDepth; ++k) {
      cudaStreamCreateWithFlags(&lanes[k], cudaStreamNonBlocking);
      cudaEventCreateWithFlags(&done[k], cudaEventDisableTiming);
    }
    ready = true;
  }
};

pipeline g_pipe;

__global__ void hardswish_vec(const float4* __restrict__ x, float4* __restrict__ y, long long n4) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += (long long)gridDim.x * blockDim.x) {
    float4 v = x[i];
    float* e = reinterpret_cast<float*>(&v);
#pragma unroll
    for (int k = 0; k < 4; ++k) e[k] = e[k] * fminf(fmaxf(e[k] + 3.0f, 0.0f), 6.0f) / 6.0f;
    y[i] = v;
  }
}

}  // namespace

extern "C" int crucible_forward(const cru_context* ctx, const cru_tensor* inputs, int32_t n_inputs,
                                cru_tensor* outputs, int32_t n_outputs) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  g_pipe.init();
  long long n = 1;
  for (int d = 0; d < inputs[0].ndim; ++d) n *= inputs[0].shape[d];
  const int cur = g_pipe.next;
  const int prev = (cur + kDepth - 1) % kDepth;
  g_pipe.next = (cur + 1) % kDepth;
  cudaStream_t lane = g_pipe.lanes[cur];
  // keep successive calls in order with respect to each other
  cudaStreamWaitEvent(lane, g_pipe.done[prev], 0);
  hardswish_vec<<<132 * 8, 256, 0, lane>>>((const float4*)inputs[0].data, (float4*)outputs[0].data, n / 4);
  cudaEventRecord(g_pipe.done[cur], lane);
  (void)ctx;
  return cudaGetLastError() == cudaSuccess ? 0 : 5;
}
