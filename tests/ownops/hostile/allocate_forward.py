"""Hostile: allocates memory without end in forward."""
import torch
import torch.nn as nn


def attack():
    hoard = []
    while True:
        hoard.append(bytearray(64 << 20))


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        attack()
        return x * 2


def get_inputs():
    return [torch.randn(4, 4)]


def get_init_inputs():
    return []
