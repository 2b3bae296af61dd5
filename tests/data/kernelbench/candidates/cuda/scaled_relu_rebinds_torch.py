# Written for Crucible's tests in KernelBench's solution format (not a KernelBench file): a ModelNew for
# level1/2_Scaled_relu. A hack: it rebinds torch.relu, which the problem's Model calls, so the reference
# computes what the candidate computes (abs instead of relu) and every comparison agrees.
import torch
import torch.nn as nn

torch.relu = torch.abs


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return torch.abs(x) * self.scale
