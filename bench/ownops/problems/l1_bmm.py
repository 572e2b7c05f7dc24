"""Level 1: batched matrix multiplication."""
import torch
import torch.nn as nn

batch_size = 16
m = 256
k = 256
n = 256


class Model(nn.Module):
    def forward(self, A, B):
        return torch.bmm(A, B)


def get_inputs():
    return [torch.randn(batch_size, m, k), torch.randn(batch_size, k, n)]


def get_init_inputs():
    return []
