# Written for Crucible's tests in KernelBench's solution format (not a KernelBench file): a ModelNew for
# level1/2_Scaled_relu (relu(x) * scale). Does not parse.
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x)
        return x
