# Written for Crucible's tests in KernelBench's solution format (not a KernelBench file): a ModelNew for
# level1/2_Scaled_relu (relu(x) * scale). Correct: the same values by another route.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return torch.clamp_min(x, 0.0) * self.scale
