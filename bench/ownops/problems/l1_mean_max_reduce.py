"""Level 1: reductions over a middle dim (mean, max)."""
import torch
import torch.nn as nn

batch_size = 64
dim1 = 256
dim2 = 512


class Model(nn.Module):
    def forward(self, x):
        return torch.mean(x, dim=1), torch.amax(x, dim=1)


def get_inputs():
    return [torch.randn(batch_size, dim1, dim2)]


def get_init_inputs():
    return []
