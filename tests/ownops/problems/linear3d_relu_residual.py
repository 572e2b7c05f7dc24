"""A Linear layer on a 3-D input, ReLU, then a residual add of the input."""
import torch
import torch.nn as nn

batch = 3
seq = 17
hidden = 41


class Model(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.fc = nn.Linear(hidden, hidden)

    def forward(self, x):
        return torch.relu(self.fc(x)) + x


def get_inputs():
    return [torch.randn(batch, seq, hidden)]


def get_init_inputs():
    return [hidden]
