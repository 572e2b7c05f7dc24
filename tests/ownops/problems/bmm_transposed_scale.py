"""Batched matmul against a transposed operand, scaled and clamped."""
import torch
import torch.nn as nn

batch = 5
m = 19
k = 33
n = 27


class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, a, b):
        return torch.clamp(torch.bmm(a, b.transpose(1, 2)) * self.scale, -2.0, 2.0)


def get_inputs():
    return [torch.randn(batch, m, k), torch.randn(batch, n, k)]


def get_init_inputs():
    return [0.25]
