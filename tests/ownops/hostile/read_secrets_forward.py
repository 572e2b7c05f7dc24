"""Hostile: tries to read a host file and list a directory while being exported."""
import os

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        print(os.listdir("/"))
        print(open("/etc/passwd").read())
        return x * 2


def get_inputs():
    return [torch.randn(4, 4)]


def get_init_inputs():
    return []
