# Written for Crucible's tests in KernelBench's solution format (not a KernelBench file): a ModelNew for
# level1/2_Scaled_relu (relu(x) * scale). Crashes: reads address 1 (0 would make ctypes allocate).
import ctypes

import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        ctypes.string_at(1, 8)
        return x
