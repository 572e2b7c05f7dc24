"""Level-1 style: a transposed 2-d convolution, stride 2, padding 1, output padding 1, with bias."""
import torch
import torch.nn as nn

batch_size = 2
in_channels = 4
out_channels = 6
size = 7


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(in_channels, out_channels, 3, stride=2, padding=1, output_padding=1,
                                         groups=2)

    def forward(self, x):
        return torch.tanh(self.deconv(x))


def get_inputs():
    return [torch.randn(batch_size, in_channels, size, size + 3)]


def get_init_inputs():
    return [in_channels, out_channels]
