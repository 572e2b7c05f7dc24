"""Level-2 style: a strided, dilated, grouped convolution without bias, then ReLU and max
pooling with overlapping, padded windows."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 3
channels = 6
out_channels = 9
size = 17


class Model(nn.Module):
    def __init__(self, channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(channels, out_channels, (3, 2), stride=(2, 1), padding=(1, 2), dilation=(1, 2),
                              groups=3, bias=False)

    def forward(self, x):
        y = F.relu(self.conv(x))
        return F.max_pool2d(y, kernel_size=3, stride=2, padding=1)


def get_inputs():
    return [torch.randn(batch_size, channels, size, size + 2)]


def get_init_inputs():
    return [channels, out_channels]
