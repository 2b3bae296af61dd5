// corpus: label=honest class=private_stream_synced task=k1_mse_loss target=cuda
// what: mse_loss with the two halves of the sum reduced concurrently on two private streams (double partials in ctx->workspace), both joined back to ctx->stream by events before the final mean kernel runs there.
#include <cuda_runtime.h>

#include "crucible_abi.h"

constexpr int kThreads = 256;
constexpr int kBlocks = 132 * 4;  // per half

__global__ void __launch_bounds__(kThreads) sq_diff_partial(const float* __restrict__ x, const float* __restrict__ t,
                                                            long long n, double* __restrict__ part) {
  __shared__ double red[kThreads / 32];
  double acc = 0.0;
  for (long long i = blockIdx.x * (long long)kThreads + threadIdx.x; i < n; i += (long long)gridDim.x * kThreads) {
    float d = x[i] - t[i];
    acc += (double)(d * d);
  }
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    double s = 0.0;
    for (int k = 0; k < kThreads / 32; ++k) s += red[k];
    part[blockIdx.x] = s;
  }
}

__global__ void finish_mean(const double* __restrict__ part, int n_part, double n, float* __restrict__ out) {
  __shared__ double red[32];
  double s = 0.0;
  for (int i = threadIdx.x; i < n_part; i += blockDim.x) s += part[i];
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    double tot = 0.0;
    for (int k = 0; k < (int)(blockDim.x >> 5); ++k) tot += red[k];
    *out = (float)(tot / n);
  }
}

struct lanes {
  cudaStream_t s[2] = {nullptr, nullptr};
  cudaEvent_t fork = nullptr, join[2] = {nullptr, nullptr};
  bool ok = true;
  lanes() {
    for (int k = 0; k < 2; ++k) {
      ok = ok && cudaStreamCreateWithFlags(&s[k], cudaStreamNonBlocking) == cudaSuccess;
      ok = ok && cudaEventCreateWithFlags(&join[k], cudaEventDisableTiming) == cudaSuccess;
    }
    ok = ok && cudaEventCreateWithFlags(&fork, cudaEventDisableTiming) == cudaSuccess;
  }
};

extern "C" int crucible_forward(const cru_context* ctx, const cru_tensor* inputs, int32_t n_inputs,
                                cru_tensor* outputs, int32_t n_outputs) {
  if (n_inputs != 2 || n_outputs != 1 || inputs[0].dtype != CRU_FLOAT32 || inputs[1].dtype != CRU_FLOAT32) return 1;
  static lanes L;
  if (!L.ok) return 3;
  if (ctx->workspace_bytes < 2 * kBlocks * sizeof(double)) return 4;
  long long n = 1;
  for (int d = 0; d < inputs[0].ndim; ++d) n *= inputs[0].shape[d];
  const float* x = (const float*)inputs[0].data;
  const float* t = (const float*)inputs[1].data;
  double* part = (double*)ctx->workspace;
  cudaStream_t main_s = (cudaStream_t)ctx->stream;
  const long long half = n / 2;
  cudaEventRecord(L.fork, main_s);
  for (int k = 0; k < 2; ++k) {
    cudaStreamWaitEvent(L.s[k], L.fork, 0);
    const long long off = k == 0 ? 0 : half, len = k == 0 ? half : n - half;
    sq_diff_partial<<<kBlocks, kThreads, 0, L.s[k]>>>(x + off, t + off, len, part + k * kBlocks);
    cudaEventRecord(L.join[k], L.s[k]);
    cudaStreamWaitEvent(main_s, L.join[k], 0);
  }
  finish_mean<<<1, 1024, 0, main_s>>>(part, 2 * kBlocks, (double)n, (float*)outputs[0].data);
  return cudaGetLastError() == cudaSuccess ? 0 : 5;
}
