"""One decode step of the decoder family's attention at the Engine Factory issue's size: 16
query heads over 4 key/value heads of width 64, one query row each, against 1025 cached
keys (decode after 1024)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)


def get_inputs():
    return [torch.randn(1, 16, 1, 64), torch.randn(1, 4, 1025, 64), torch.randn(1, 4, 1025, 64)]


def get_init_inputs():
    return []
