# Written for Crucible's tests in KernelBench's problem format (not a KernelBench file).
import torch
import torch.nn as nn


class Model(nn.Module):
    """relu(x) * scale, the scale given at construction."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return torch.relu(x) * self.scale


def get_inputs():
    return [torch.randn(4, 64)]


def get_init_inputs():
    return [2.5]
