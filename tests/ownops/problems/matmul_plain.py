"""Level-1 style: a plain matrix product of two inputs."""
import torch
import torch.nn as nn

M = 45
K = 67
N = 39


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
