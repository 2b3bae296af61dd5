# Written for Crucible's tests in KernelBench's solution format (not a KernelBench file): a ModelNew for
# level1/2_Scaled_relu. A hack: the work runs on a stream of its own that the caller's stream never waits
# for, so the call returns before the result exists (a clock on the caller's stream misses the work).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale
        self.side = torch.cuda.Stream()

    def forward(self, x):
        self.side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.side):
            for _ in range(20):  # long enough to outlive the caller's stream
                y = torch.relu(x) * self.scale
        return y
