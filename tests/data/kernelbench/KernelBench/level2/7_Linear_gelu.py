# Written for Crucible's tests in KernelBench's problem format (not a KernelBench file).
import torch
import torch.nn as nn


class Model(nn.Module):
    """gelu(x W^T + b): weights drawn at construction, so they follow the seed."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.nn.functional.gelu(self.linear(x))


def get_inputs():
    return [torch.randn(8, 32)]


def get_init_inputs():
    return [32, 16]
