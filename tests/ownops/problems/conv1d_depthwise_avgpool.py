"""Level-1 style: a depthwise 1-d convolution, then average pooling that does not count the
padding."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 2
channels = 8
length = 29


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.depthwise = nn.Conv1d(channels, channels, 5, padding=2, groups=channels)

    def forward(self, x):
        y = self.depthwise(x)
        return F.avg_pool1d(y, kernel_size=4, stride=3, padding=2, count_include_pad=False)


def get_inputs():
    return [torch.randn(batch_size, channels, length)]


def get_init_inputs():
    return [channels]
