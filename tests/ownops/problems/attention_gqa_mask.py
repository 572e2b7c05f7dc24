"""Grouped-query attention with an additive mask and an explicit scale."""
import torch
import torch.nn as nn
import torch.nn.functional as F

heads = 4
kv_heads = 2
q_len = 13
kv_len = 29
head_dim = 16


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=0.3, enable_gqa=True)


def get_inputs():
    return [torch.randn(1, heads, q_len, head_dim), torch.randn(1, kv_heads, kv_len, head_dim),
            torch.randn(1, kv_heads, kv_len, head_dim), torch.randn(q_len, kv_len)]


def get_init_inputs():
    return []
