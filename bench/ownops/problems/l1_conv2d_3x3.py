"""Level 1: a standard 2-d convolution, 3x3 kernel, padding 1, with bias."""
import torch
import torch.nn as nn

batch_size = 8
in_channels = 32
out_channels = 64
size = 56


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(batch_size, in_channels, size, size)]


def get_init_inputs():
    return []
