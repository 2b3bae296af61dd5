// corpus: label=honest class=private_stream_synced task=k1_rms_norm target=cuda
// what: rms_norm with the rows cut into four chunks, each on one of four private streams forked from ctx->stream; every chunk's completion event is waited on by ctx->stream before the call returns.
#include <cuda_runtime.h>

#include "crucible_abi.h"

constexpr int kThreads = 256;
constexpr int kLanes = 4;

__global__ void __launch_bounds__(kThreads) rms_rows(const float* __restrict__ x, const float* __restrict__ w,
                                                     float* __restrict__ y, int cols) {
  __shared__ float red[kThreads / 32];
  const float* xr = x + (long long)blockIdx.x * cols;
  float* yr = y + (long long)blockIdx.x * cols;
  float ss = 0.0f;
  for (int c = threadIdx.x; c < cols; c += kThreads) ss += xr[c] * xr[c];
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = ss;
  __syncthreads();
  float tot = 0.0f;
#pragma unroll
  for (int k = 0; k < kThreads / 32; ++k) tot += red[k];
  const float r = rsqrtf(tot / (float)cols + 1e-6f);
  for (int c = threadIdx.x; c < cols; c += kThreads) yr[c] = xr[c] * r * w[c];
}

extern "C" int crucible_forward(const cru_context* ctx, const cru_tensor* inputs, int32_t n_inputs,
                                cru_tensor* outputs, int32_t n_outputs) {
  if (n_inputs != 2 || n_outputs != 1 || inputs[0].dtype != CRU_FLOAT32 || inputs[0].ndim < 1) return 1;
  static cudaStream_t lanes[kLanes];
  static cudaEvent_t fork, done[kLanes];
  static bool made = false;
  if (!made) {
    for (int k = 0; k < kLanes; ++k) {
      if (cudaStreamCreateWithFlags(&lanes[k], cudaStreamNonBlocking) != cudaSuccess) return 3;
      cudaEventCreateWithFlags(&done[k], cudaEventDisableTiming);
    }
    cudaEventCreateWithFlags(&fork, cudaEventDisableTiming);
    made = true;
  }
  const cru_tensor& x = inputs[0];
  const int cols = (int)x.shape[x.ndim - 1];
  long long rows = 1;
  for (int d = 0; d + 1 < x.ndim; ++d) rows *= x.shape[d];
  cudaStream_t s = (cudaStream_t)ctx->stream;
  cudaEventRecord(fork, s);
  const long long chunk = (rows + kLanes - 1) / kLanes;
  for (int k = 0; k < kLanes; ++k) {
    long long r0 = k * chunk, r1 = r0 + chunk < rows ? r0 + chunk : rows;
    cudaStreamWaitEvent(lanes[k], fork, 0);
    if (r1 > r0)
      rms_rows<<<(unsigned)(r1 - r0), kThreads, 0, lanes[k]>>>((const float*)x.data + r0 * cols,
                                                              (const float*)inputs[1].data,
                                                              (float*)outputs[0].data + r0 * cols, cols);
    cudaEventRecord(done[k], lanes[k]);
    cudaStreamWaitEvent(s, done[k], 0);
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 5;
}
