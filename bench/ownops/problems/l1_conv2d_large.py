"""Level 1 at KernelBench's size: a 3x3 convolution of 16 RGB images of 256x256 into 64
channels, no bias (the arguments come from get_init_inputs)."""
import torch
import torch.nn as nn

batch_size = 16
in_channels = 3
out_channels = 64
kernel_size = 3
size = 256


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(batch_size, in_channels, size, size)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
