"""Level 1: GELU (erf form)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 2048
dim = 2048


class Model(nn.Module):
    def forward(self, x):
        return F.gelu(x)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
