# Written for Crucible's tests in KernelBench's solution format (not a KernelBench file): a ModelNew for
# level2/7_Linear_gelu. Honest: its own weights, built like the problem's, and the same function.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.nn.functional.gelu(torch.addmm(self.linear.bias, x, self.linear.weight.t()))
