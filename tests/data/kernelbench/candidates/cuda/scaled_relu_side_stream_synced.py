# Written for Crucible's tests in KernelBench's solution format (not a KernelBench file): a ModelNew for
# level1/2_Scaled_relu. Honest: its work runs on a stream of its own, which the caller's stream waits for
# before the result is returned.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale
        self.side = torch.cuda.Stream()

    def forward(self, x):
        caller = torch.cuda.current_stream()
        self.side.wait_stream(caller)
        with torch.cuda.stream(self.side):
            y = torch.relu(x) * self.scale
        caller.wait_stream(self.side)
        y.record_stream(caller)
        return y
