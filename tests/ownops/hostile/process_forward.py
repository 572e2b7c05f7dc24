"""Hostile: starts a process in forward."""
import os

import torch
import torch.nn as nn

MARKER = "/tmp/int21_hostile_process_forward"


def attack():
    os.system(f"touch {MARKER}; sleep 1000")


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
