"""log_softmax over a middle dim of a 3-D tensor (a strided reduction)."""
import torch
import torch.nn as nn

a = 4
b = 29
c = 21


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.log_softmax(x, dim=1)


def get_inputs():
    return [torch.randn(a, b, c)]


def get_init_inputs():
    return []
