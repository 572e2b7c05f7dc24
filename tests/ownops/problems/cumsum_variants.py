"""Level-1 style scans: a masked cumsum along the last dim, a reverse cumsum, a cumprod along dim 0."""
import torch
import torch.nn as nn

batch_size = 13
length = 67


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x, mask):
        masked = torch.cumsum(x * mask, dim=self.dim)
        reverse = torch.cumsum(x.flip(self.dim), dim=self.dim).flip(self.dim)
        return masked, reverse, torch.cumprod(1 + 0.1 * x, dim=0)


def get_inputs():
    return [torch.randn(batch_size, length), (torch.rand(batch_size, length) > 0.5).float()]


def get_init_inputs():
    return [1]
