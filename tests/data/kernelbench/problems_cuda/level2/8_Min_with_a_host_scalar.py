# Written for Crucible's tests in KernelBench's problem format (not a KernelBench file), like KernelBench's
# level-2 problems 83 and 93: forward() makes a device tensor of a Python scalar, a copy from host memory
# that waits for the device, and that PyTorch refuses inside a CUDA-graph capture.
import torch
import torch.nn as nn


class Model(nn.Module):
    """relu(min(2 x, 0.5)), the bound a tensor made on each call."""

    def __init__(self, bound):
        super().__init__()
        self.bound = bound

    def forward(self, x):
        return torch.relu(torch.min(x * 2.0, torch.tensor(self.bound, device=x.device)))


def get_inputs():
    return [torch.rand(64, 1024)]


def get_init_inputs():
    return [0.5]
