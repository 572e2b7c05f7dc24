"""A GPT-2-style decoder written the way nanoGPT-like code writes it (not our decoder family):
LayerNorm, a tanh-GELU MLP, multi-head causal attention with biases and a masked_fill over a
registered tril buffer, learnt positions, an untied LM head. The engine import must take it
as a module file with nothing Llama-specific."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 1
seq_len = 16
n_embd = 64
n_head = 4
n_layer = 2
vocab_size = 128


class NewGELU(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, max_len):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.n_head = n_head
        self.n_embd = n_embd
        self.register_buffer("bias", torch.tril(torch.ones(max_len, max_len)).view(1, 1, max_len, max_len))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self, n_embd, n_head, max_len):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, max_len)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.c_proj = nn.Linear(4 * n_embd, n_embd)
        self.act = NewGELU()

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.c_proj(self.act(self.c_fc(self.ln_2(x))))
        return x


class Model(nn.Module):
    def __init__(self, n_embd, n_head, n_layer, vocab_size, max_len):
        super().__init__()
        self.wpe = nn.Parameter(torch.randn(max_len, n_embd) * 0.02)
        self.h = nn.ModuleList([Block(n_embd, n_head, max_len) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)

    def forward(self, x):
        T = x.size(1)
        x = x + self.wpe[:T]
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def get_inputs():
    return [torch.randn(batch_size, seq_len, n_embd)]


def get_init_inputs():
    return [n_embd, n_head, n_layer, vocab_size, seq_len]
