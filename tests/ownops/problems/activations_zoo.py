"""A chain of elementwise activations with broadcasting against a per-column vector."""
import torch
import torch.nn as nn
import torch.nn.functional as F

rows = 17
cols = 93


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, v):
        y = F.mish(x) + F.hardswish(x) - F.softplus(x) * 0.5
        y = F.elu(y) + F.leaky_relu(y, 0.2) + F.hardtanh(y, -2.0, 2.0) + F.gelu(x, approximate="tanh")
        y = torch.where(y > v, y, v * 2) + torch.minimum(y, v) - torch.maximum(x, v)
        y = y + torch.rsqrt(x.abs() + 1) + torch.pow(x.abs() + 0.1, 1.7) + torch.exp(-x * x) + F.silu(v)
        return torch.clamp(y, min=-5.0) / (1 + torch.sigmoid(v)) + torch.log1p(x.abs())


def get_inputs():
    return [torch.randn(rows, cols), torch.randn(cols)]


def get_init_inputs():
    return []
