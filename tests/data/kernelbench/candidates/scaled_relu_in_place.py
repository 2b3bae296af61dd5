# Written for Crucible's tests in KernelBench's solution format (not a KernelBench file): a ModelNew for
# level1/2_Scaled_relu (relu(x) * scale). In place: writes its result over
# the input (the ReLU "win" an outside check found under KernelBench's own harness).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return torch.relu_(x).mul_(self.scale)
