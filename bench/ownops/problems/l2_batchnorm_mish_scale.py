"""Level 2: BatchNorm (eval), Mish, scaling by a learned per-channel vector."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 64
features = 512
length = 64


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.bn = nn.BatchNorm1d(features)
        self.scale = nn.Parameter(torch.randn(features, 1))
        with torch.no_grad():
            self.bn.running_mean.normal_()
            self.bn.running_var.uniform_(0.5, 2.0)

    def forward(self, x):
        return F.mish(self.bn(x)) * self.scale


def get_inputs():
    return [torch.randn(batch_size, features, length)]


def get_init_inputs():
    return [features]
