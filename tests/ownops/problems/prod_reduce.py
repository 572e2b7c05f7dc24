"""Product over a dim: the stress search must not offer inputs whose product underflows float32."""
import torch
import torch.nn as nn

a = 5
b = 13
c = 21


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.prod(x, dim=1)


def get_inputs():
    return [torch.rand(a, b, c) + 0.5]


def get_init_inputs():
    return []
