"""A Linear layer with a deep, ragged reduction (k 389: several k slices, a tail short of a vector)
and more rows than a tile, then SiLU."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch = 7
seq = 11
in_features = 389
out_features = 53


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.proj = nn.Linear(in_features, out_features)

    def forward(self, x):
        return F.silu(self.proj(x))


def get_inputs():
    return [torch.randn(batch, seq, in_features)]


def get_init_inputs():
    return [in_features, out_features]
