"""Level-2 style: Gemm, BatchNorm (eval), a learned scale, softmax — the norm's per-channel
rsqrt(var + eps) is computed inside the Gemm's epilogue."""
import torch
import torch.nn as nn

batch_size = 29
in_features = 45
out_features = 31


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.bn = nn.BatchNorm1d(out_features)
        self.scale = nn.Parameter(torch.ones(1) * 1.5)

    def forward(self, x):
        return torch.softmax(self.scale * self.bn(self.gemm(x)), dim=1)


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
