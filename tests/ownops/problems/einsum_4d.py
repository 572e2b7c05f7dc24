"""A 4-D tensor times a matrix written as einsum (becomes a reshaped matmul)."""
import torch
import torch.nn as nn

b = 2
i = 3
j = 5
l_dim = 7
k = 11


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.einsum("bijl,lk->bijk", A, B)


def get_inputs():
    return [torch.randn(b, i, j, l_dim), torch.randn(l_dim, k)]


def get_init_inputs():
    return []
