"""Level 1: LayerNorm over the last two dims."""
import torch
import torch.nn as nn

batch_size = 64
features = 64
dim = 256


class Model(nn.Module):
    def __init__(self, normalized_shape):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x):
        return self.ln(x)


def get_inputs():
    return [torch.randn(batch_size, features, dim)]


def get_init_inputs():
    return [(features, dim)]
