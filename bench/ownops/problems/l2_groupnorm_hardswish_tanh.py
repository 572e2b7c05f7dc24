"""Level 2: GroupNorm, HardSwish, Tanh, residual."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 32
channels = 256
length = 256
groups = 16


class Model(nn.Module):
    def __init__(self, channels, groups):
        super().__init__()
        self.gn = nn.GroupNorm(groups, channels)

    def forward(self, x):
        y = self.gn(x)
        return torch.tanh(F.hardswish(y)) + x


def get_inputs():
    return [torch.randn(batch_size, channels, length)]


def get_init_inputs():
    return [channels, groups]
