"""Level 1: a transposed 2-d convolution, 4x4 kernel, stride 2, padding 1."""
import torch
import torch.nn as nn

batch_size = 8
in_channels = 32
out_channels = 16
size = 28


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(in_channels, out_channels, 4, stride=2, padding=1)

    def forward(self, x):
        return self.deconv(x)


def get_inputs():
    return [torch.randn(batch_size, in_channels, size, size)]


def get_init_inputs():
    return []
