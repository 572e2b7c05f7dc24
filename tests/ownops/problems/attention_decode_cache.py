"""One decode step against a key/value cache: the step's new key and value rows are
concatenated to the cached ones along the key axis, and only the attention reads the
concatenation. The cache is a prime length; the keys are rows of one layer of a stacked cache
(a view of a bigger input, as a decoder's cache is), the values are cached transposed (head
width outermost, so value rows are not contiguous); four query heads share each key/value
head."""
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

    def forward(self, q, k_new, v_new, k_cache, v_cache_t):
        keys = torch.cat((k_cache[1], k_new), dim=2)
        values = torch.cat((v_cache_t.transpose(-1, -2), v_new), dim=-2)
        return F.scaled_dot_product_attention(q, keys, values, enable_gqa=True)


def get_inputs():
    return [torch.randn(batch, heads, 1, head_dim), torch.randn(batch, kv_heads, 1, head_dim),
            torch.randn(batch, kv_heads, 1, head_dim), torch.randn(2, batch, kv_heads, past, head_dim),
            torch.randn(batch, kv_heads, head_dim, past)]


def get_init_inputs():
    return []
