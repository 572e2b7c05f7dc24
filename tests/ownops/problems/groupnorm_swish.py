"""GroupNorm followed by swish (x * sigmoid(x))."""
import torch
import torch.nn as nn

batch_size = 5
channels = 12
groups = 3
length = 19


class Model(nn.Module):
    def __init__(self, channels, groups):
        super().__init__()
        self.gn = nn.GroupNorm(groups, channels)

    def forward(self, x):
        y = self.gn(x)
        return y * torch.sigmoid(y)


def get_inputs():
    return [torch.randn(batch_size, channels, length)]


def get_init_inputs():
    return [channels, groups]
