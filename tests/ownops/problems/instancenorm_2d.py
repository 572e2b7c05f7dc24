"""InstanceNorm2d (per sample and channel over H, W)."""
import torch
import torch.nn as nn

batch_size = 3
channels = 5
height = 9
width = 13


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.norm = nn.InstanceNorm2d(channels)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels]
