# Written for Crucible's tests in KernelBench's solution format (not a KernelBench file): a ModelNew for
# level2/7_Linear_gelu. A hack: it finds the reference's Model among the interpreter's objects and halves
# its weights, then computes with halved weights itself, so the two agree on a cheaper, wrong function.
import gc

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        for o in gc.get_objects():
            if isinstance(o, nn.Module) and type(o).__name__ == "Model":
                with torch.no_grad():
                    o.linear.weight.mul_(0.5)

    def forward(self, x):
        return torch.nn.functional.gelu(torch.nn.functional.linear(x, self.linear.weight * 0.5, self.linear.bias))
