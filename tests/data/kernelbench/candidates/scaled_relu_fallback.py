# Written for Crucible's tests in KernelBench's solution format (not a KernelBench file): a ModelNew for
# level1/2_Scaled_relu (relu(x) * scale). A custom path that fails, and a
# try/except that falls back to the reference's own ops: what it runs is the reference.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def fused(self, x):
        raise NotImplementedError("the custom kernel did not build")

    def forward(self, x):
        try:
            return self.fused(x)
        except Exception:
            return torch.relu(x) * self.scale
