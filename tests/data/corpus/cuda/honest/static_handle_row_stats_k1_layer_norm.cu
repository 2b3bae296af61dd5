// corpus: label=honest class=static_handle task=k1_layer_norm target=cuda
// what: layer_norm as a statistics kernel (per-row mean and rstd, two passes) into a static device buffer sized by the row count and allocated once, then an elementwise normalise kernel; the buffer is rewritten every call before it is read.
#include <cuda_runtime.h>

#include "crucible_abi.h"

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads) row_stats(const float* __restrict__ x, int cols, float eps,
                                                      float2* __restrict__ stats) {
  __shared__ float red[kThreads / 32];
  __shared__ float mean_s;
  const float* xr = x + (long long)blockIdx.x * cols;
  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += kThreads) s += xr[c];
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    float t = 0.0f;
    for (int k = 0; k < kThreads / 32; ++k) t += red[k];
    mean_s = t / (float)cols;
  }
  __syncthreads();
  const float mean = mean_s;
  float q = 0.0f;
  for (int c = threadIdx.x; c < cols; c += kThreads) {
    float d = xr[c] - mean;
    q += d * d;
  }
  for (int o = 16; o > 0; o >>= 1) q += __shfl_xor_sync(0xffffffffu, q, o);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = q;
  __syncthreads();
  if (threadIdx.x == 0) {
    float t = 0.0f;
    for (int k = 0; k < kThreads / 32; ++k) t += red[k];
    stats[blockIdx.x] = make_float2(mean, rsqrtf(t / (float)cols + eps));
  }
}

__global__ void normalise(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
                          const float2* __restrict__ stats, float* __restrict__ y, long long n, int cols) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const int c = (int)(i % cols);
    const float2 st = stats[i / cols];
    y[i] = (x[i] - st.x) * st.y * w[c] + b[c];
  }
}

extern "C" int crucible_forward(const cru_context* ctx, const cru_tensor* inputs, int32_t n_inputs,
                                cru_tensor* outputs, int32_t n_outputs) {
  if (n_inputs != 3 || n_outputs != 1 || inputs[0].dtype != CRU_FLOAT32 || inputs[0].ndim < 1) return 1;
  const cru_tensor& x = inputs[0];
  const int cols = (int)x.shape[x.ndim - 1];
  long long rows = 1;
  for (int d = 0; d + 1 < x.ndim; ++d) rows *= x.shape[d];
  if (rows == 0) return 0;
  static float2* stats = nullptr;
  static long long stats_rows = 0;
  if (rows > stats_rows) {
    if (stats) cudaFree(stats);
    stats = nullptr;
    stats_rows = 0;
    if (cudaMalloc(&stats, rows * sizeof(float2)) != cudaSuccess) return 3;
    stats_rows = rows;
  }
  cudaStream_t s = (cudaStream_t)ctx->stream;
  row_stats<<<(unsigned)rows, kThreads, 0, s>>>((const float*)x.data, cols, 1e-5f, stats);
  normalise<<<132 * 16, 256, 0, s>>>((const float*)x.data, (const float*)inputs[1].data, (const float*)inputs[2].data,
                                     stats, (float*)outputs[0].data, rows * cols, cols);
  return cudaGetLastError() == cudaSuccess ? 0 : 5;
}
