"""Hostile: runs a program through subprocess at import time."""
import subprocess

import torch
import torch.nn as nn

subprocess.run(["/bin/sh", "-c", "touch /tmp/int21_hostile_subprocess; sleep 1000"])


class Model(nn.Module):
    def forward(self, x):
        return x * 2


def get_inputs():
    return [torch.randn(4, 4)]


def get_init_inputs():
    return []
