# Written for Crucible's tests in KernelBench's solution format (not a KernelBench file): a ModelNew for
# level1/2_Scaled_relu (relu(x) * scale). Computes in a thread of its own,
# started in forward(): work no clock of the call would see.
import threading

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        out = []
        t = threading.Thread(target=lambda: out.append(torch.relu(x) * self.scale))
        t.start()
        t.join()
        return out[0]
