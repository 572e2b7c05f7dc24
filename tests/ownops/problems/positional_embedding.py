"""Learnt positions looked up the way GPT-2-style models do: ``nn.Embedding`` at
``torch.arange`` positions (fixed when the model is captured), here at every position, at
every other one, and at positions in two runs; the token side comes in as hidden states."""
import torch
import torch.nn as nn

batch = 2
seq = 9
hidden = 40
max_len = 30


class Model(nn.Module):
    def __init__(self, hidden, max_len):
        super().__init__()
        self.wpe = nn.Embedding(max_len, hidden)
        self.skip = nn.Embedding(max_len, hidden)

    def forward(self, x):
        T = x.size(1)
        pos = torch.arange(0, T, dtype=torch.long, device=x.device).unsqueeze(0)
        h = x + self.wpe(pos)                                        # rows 0..T-1
        h = h * self.skip(torch.arange(1, 2 * T, 2, device=x.device))  # rows 1, 3, ..., 2T-1
        two_runs = torch.cat([torch.arange(T - 3, T), torch.arange(0, T - 3)])
        return h + self.wpe(two_runs)                                # rows T-3..T-1, then 0..T-4


def get_inputs():
    return [torch.randn(batch, seq, hidden)]


def get_init_inputs():
    return [hidden, max_len]
