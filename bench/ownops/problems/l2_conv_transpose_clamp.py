"""Level 2 at KernelBench's size: a transposed 3x3 convolution (stride 2, padding 1, output
padding 1) of 128 small RGB images, a learned per-channel bias, then clamp, scale, clamp and
divide."""
import torch
import torch.nn as nn

batch_size = 128
in_channels = 3
out_channels = 16
size = 32
scale = 2.0


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, scale):
        super().__init__()
        self.up = nn.ConvTranspose2d(in_channels, out_channels, 3, stride=2, padding=1, output_padding=1)
        self.bias = nn.Parameter(torch.randn(out_channels, 1, 1))
        self.scale = scale

    def forward(self, x):
        y = torch.clamp(self.up(x) + self.bias, 0.0, 1.0)
        return torch.clamp(y * self.scale, 0.0, 1.0) / self.scale


def get_inputs():
    return [torch.randn(batch_size, in_channels, size, size)]


def get_init_inputs():
    return [in_channels, out_channels, scale]
