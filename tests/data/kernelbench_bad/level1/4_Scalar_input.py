import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, k):
        return x * k


def get_inputs():
    return [torch.randn(3), 7]


def get_init_inputs():
    return []
