"""Views and copies: permute, slice, flip, concatenate, reshape, expand."""
import torch
import torch.nn as nn

b = 3
c = 7
t = 11


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        z = torch.cat([x, y.flip(2) * 2], dim=1)  # [b, 2c, t]
        z = z.permute(0, 2, 1)[:, 1:, :]          # [b, t-1, 2c]
        w = z.reshape(b, -1) + 1                  # [b, (t-1)*2c]
        m = y.mean(dim=2, keepdim=True).expand(b, c, t)
        return torch.relu(w), x.transpose(1, 2).contiguous() * m.transpose(1, 2)


def get_inputs():
    return [torch.randn(b, c, t), torch.randn(b, c, t)]


def get_init_inputs():
    return []
