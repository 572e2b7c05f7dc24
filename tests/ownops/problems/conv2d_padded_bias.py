"""Level-1 style: a 2-d convolution, 3x3, padding 1, with bias."""
import torch
import torch.nn as nn

batch_size = 2
in_channels = 5
out_channels = 7
height = 11
width = 13


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels]
