# Written for Crucible's tests in KernelBench's solution format (not a KernelBench file): a ModelNew for
# level1/2_Scaled_relu (relu(x) * scale). Disguised: returns a tensor subclass that holds nothing and
# claims the output's shape, computing values only when something reads them through its own methods.
import torch
import torch.nn as nn


class LazyOutput(torch.Tensor):
    @staticmethod
    def __new__(cls, x, scale):
        t = torch.Tensor._make_subclass(cls, torch.empty(0, dtype=x.dtype, device=x.device))
        t.x, t.scale = x, scale
        return t

    @property
    def shape(self):
        return self.x.shape

    def size(self, dim=None):
        return self.x.size() if dim is None else self.x.size(dim)

    def to_dense(self):
        return torch.relu(self.x) * self.scale


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return LazyOutput(x, self.scale)
