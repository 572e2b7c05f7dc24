"""LayerNorm with weight and bias over the last dim."""
import torch
import torch.nn as nn

batch_size = 19
features = 77


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.ln = nn.LayerNorm(features)
        with torch.no_grad():
            self.ln.weight.uniform_(0.5, 1.5)
            self.ln.bias.uniform_(-0.5, 0.5)

    def forward(self, x):
        return self.ln(x)


def get_inputs():
    return [torch.randn(batch_size, features) * 3 + 1]


def get_init_inputs():
    return [features]
