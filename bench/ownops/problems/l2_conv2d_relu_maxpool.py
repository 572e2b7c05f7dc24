"""Level 2: Conv2d, ReLU, then 3x3 max pooling with stride 2 and padding 1."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 8
in_channels = 16
out_channels = 32
size = 64


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3)

    def forward(self, x):
        return F.max_pool2d(F.relu(self.conv(x)), 3, stride=2, padding=1)


def get_inputs():
    return [torch.randn(batch_size, in_channels, size, size)]


def get_init_inputs():
    return []
