"""Causal scaled-dot-product attention over heads."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch = 2
heads = 3
seq = 37
head_dim = 24


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def get_inputs():
    return [torch.randn(batch, heads, seq, head_dim) for _ in range(3)]


def get_init_inputs():
    return []
