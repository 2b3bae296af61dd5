# Written for Crucible's tests in KernelBench's solution format (not a KernelBench file): a ModelNew for
# level1/2_Scaled_relu (relu(x) * scale) as most published CUDA solutions are written: a kernel built by
# torch.utils.cpp_extension.load_inline and launched without a stream (the legacy default stream).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_cuda = r"""
#include <torch/extension.h>

__global__ void scaled_relu_kernel(const float* x, float* y, float scale, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(x[i], 0.0f) * scale;
}

torch::Tensor scaled_relu(torch::Tensor x, double scale) {
  auto y = torch::empty_like(x);
  int64_t n = x.numel();
  scaled_relu_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), (float)scale, n);
  return y;
}
"""

_ext = load_inline(name="crucible_test_scaled_relu", cpp_sources="torch::Tensor scaled_relu(torch::Tensor x, double scale);",
                   cuda_sources=_cuda, functions=["scaled_relu"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return _ext.scaled_relu(x.contiguous(), self.scale)
