"""Level 2: Matmul, dropout (eval: identity), softmax over features, then a scaled residual."""
import torch
import torch.nn as nn

batch_size = 256
in_features = 1024
out_features = 1024


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.dropout = nn.Dropout(0.2)

    def forward(self, x):
        x = self.dropout(self.matmul(x))
        return torch.softmax(x, dim=1) * 4.0


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
