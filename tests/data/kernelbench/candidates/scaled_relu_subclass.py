# Written for Crucible's tests in KernelBench's solution format (not a KernelBench file): a ModelNew for
# level1/2_Scaled_relu (relu(x) * scale). Honest: it returns its result as a tensor subclass (a tag, as a
# library might add) whose storage holds exactly the values and shape it claims.
import torch
import torch.nn as nn


class Tagged(torch.Tensor):
    pass


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return (torch.relu(x) * self.scale).as_subclass(Tagged)
