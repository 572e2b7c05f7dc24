"""Hostile: opens (creates) a file at import time."""
import torch
import torch.nn as nn

MARKER = "/tmp/int21_hostile_open_import"


def attack():
    with open(MARKER, "w") as f:
        f.write("escaped")

attack()


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * 2


def get_inputs():
    return [torch.randn(4, 4)]


def get_init_inputs():
    return []
