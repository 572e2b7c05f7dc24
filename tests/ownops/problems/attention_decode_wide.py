"""One decode step of grouped-query attention with a head width of whole vectors: one query
row per head against a cache of a prime length, four query heads per key/value head. Key and
value rows are contiguous, so scores are dot products of rows and P.V reads the values
where they are."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch = 2
heads = 8
kv_heads = 2
past = 83
head_dim = 32


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)


def get_inputs():
    return [torch.randn(batch, heads, 1, head_dim), torch.randn(batch, kv_heads, past, head_dim),
            torch.randn(batch, kv_heads, past, head_dim)]


def get_init_inputs():
    return []
