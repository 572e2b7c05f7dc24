"""Level 1: a pointwise (1x1) 2-d convolution."""
import torch
import torch.nn as nn

batch_size = 8
in_channels = 64
out_channels = 128
size = 56


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 1)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(batch_size, in_channels, size, size)]


def get_init_inputs():
    return []
