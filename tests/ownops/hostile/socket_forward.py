"""Hostile: opens a network socket in forward."""
import socket

import torch
import torch.nn as nn


def attack():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.connect(("127.0.0.1", 9))


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
