"""Level 1: a depthwise 2-d convolution, 3x3, stride 1, padding 1."""
import torch
import torch.nn as nn

batch_size = 8
channels = 64
size = 56


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1, groups=channels)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(batch_size, channels, size, size)]


def get_init_inputs():
    return []
