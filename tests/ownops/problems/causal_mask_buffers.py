"""Attention the way Hugging Face's GPT-2 writes it, with the state a model keeps in buffers:
a bool causal mask ``[1, 1, max, max]`` sliced to the keys and applied with ``torch.where``
and ``finfo.min``, and learnt positions looked up through an int64 ``position_ids`` buffer.
Both buffers are fixed when the model is captured, so they fold into the graph."""
import math

import torch
import torch.nn as nn

batch = 2
seq = 11
hidden = 32
heads = 4
max_len = 40


class Model(nn.Module):
    def __init__(self, hidden, heads, max_len):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.wpe = nn.Embedding(max_len, hidden)
        self.register_buffer("bias", torch.tril(torch.ones(max_len, max_len, dtype=torch.bool)).view(1, 1, max_len, max_len),
                             persistent=False)
        self.register_buffer("position_ids", torch.arange(max_len).expand((1, -1)), persistent=False)

    def forward(self, x):
        b, t, c = x.shape
        x = x + self.wpe(self.position_ids[:, :t])
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(c // self.heads)
        mask = self.bias[:, :, 0:t, :t]
        w = torch.where(mask, w, torch.tensor(torch.finfo(w.dtype).min, dtype=w.dtype))
        y = torch.matmul(w.softmax(dim=-1), v)
        return y.transpose(1, 2).reshape(b, t, c)


def get_inputs():
    return [torch.randn(batch, seq, hidden)]


def get_init_inputs():
    return [hidden, heads, max_len]
