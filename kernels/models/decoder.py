"""The built-in decoder family: a Llama-style causal language model in plain PyTorch.

This file is written the way a user writes a model, and it is SELF-CONTAINED: it imports
only the standard library and torch, because :func:`kernels.models.problem.problem_source`
pastes this very text into a KernelBench-format problem file that the own-ops capture runs
in its sandbox. Keep it that way (no ``kernels`` imports, no top-level numeric constants,
which a problem file would expose as overridable sizes, and no ``from __future__ import
annotations``: a dataclass with string annotations cannot be built by ``exec`` outside
``sys.modules``, which is how a problem file is run).

The block: pre-norm RMSNorm, rotary position embedding (the "rotate half" convention of
Hugging Face's Llama, so its checkpoints load unchanged), grouped-query attention with a
causal mask, a SwiGLU MLP, a residual stream; N layers, a token embedding, a final RMSNorm
and an untied LM head. Parameter names are Hugging Face's (``model.layers.0.self_attn.
q_proj.weight``...), so ``state_dict()`` is a checkpoint.

Phases (static shapes, each exportable on its own with ``torch.export``):

- **prefill** ``x [batch, seq, hidden] -> (logits [batch, seq, vocab], kv)`` for positions
  ``0..seq-1``;
- **decode** ``(x [batch, 1, hidden], kv [.., past, ..]) -> (logits [batch, 1, vocab],
  kv_new)`` for position ``past``: attends to the ``past`` cached rows and itself.

The phases take **hidden states, not token ids**: the kernel ABI is float32 buffers and the
own-ops opset refuses integer indexing, and the embedding lookup is a row copy (4 KiB a
token at hidden 1024) with nothing to optimise. :meth:`DecoderLM.embed` does it, in the
trusted driver, before either phase; ``prefill_ids``/``decode_ids`` are the conveniences.

KV layout: ONE float32 tensor ``[layers, 2, batch, kv_heads, positions, head_dim]`` (index
1 = 0 for K, 1 for V), K stored after RoPE. One buffer is one ABI argument however many
layers; ``positions`` is the cache length, so the decode step's new rows are the same
layout with ``positions = 1`` and the grown cache is a concatenation along axis 4.
"""
import math
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn


class ConfigError(ValueError):
    """A decoder configuration that cannot be built; the message names the key."""


@dataclass(frozen=True)
class DecoderConfig:
    """Sizes of one member of the family. ``seed`` picks the random weights (used only when
    no checkpoint supplies them); ``max_seq`` bounds the RoPE table, hence prefill length
    and decode position."""

    hidden: int
    heads: int
    kv_heads: int
    ffn: int
    layers: int
    vocab: int
    rope_theta: float = 10000.0
    eps: float = 1e-5
    max_seq: int = 2048
    seed: int = 0

    def __post_init__(self):
        for key in ("hidden", "heads", "kv_heads", "ffn", "layers", "vocab", "max_seq"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{key} must be a positive integer, got {value!r}")
        if self.hidden % self.heads:
            raise ConfigError(f"hidden ({self.hidden}) must be a multiple of heads ({self.heads})")
        if self.heads % self.kv_heads:
            raise ConfigError(f"heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads})")
        if self.head_dim % 2:
            raise ConfigError(f"head_dim = hidden / heads = {self.head_dim} must be even for RoPE")
        if not (self.rope_theta > 1.0 and math.isfinite(self.rope_theta)):
            raise ConfigError(f"rope_theta must be a finite number > 1, got {self.rope_theta!r}")
        if not (0.0 < self.eps < 1.0):
            raise ConfigError(f"eps must be in (0, 1), got {self.eps!r}")

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @classmethod
    def from_text(cls, text: str) -> "DecoderConfig":
        """Parse ``hidden=1024,heads=16,kv_heads=4,ffn=2816,layers=4,vocab=8192`` (the CLI's
        ``decoder:`` spelling, prefix optional). Unknown keys are an error, not ignored."""
        body = text.strip()
        if body.startswith("decoder:"):
            body = body[len("decoder:"):]
        fields = cls.__dataclass_fields__
        values: dict = {}
        for part in filter(None, (p.strip() for p in body.split(","))):
            key, eq, raw = part.partition("=")
            key = key.strip()
            if not eq:
                raise ConfigError(f"{part!r}: expected key=value")
            if key not in fields:
                raise ConfigError(f"unknown key {key!r}; keys: {', '.join(fields)}")
            try:
                values[key] = float(raw) if key in ("rope_theta", "eps") else int(raw)
            except ValueError:
                raise ConfigError(f"{key}: {raw.strip()!r} is not a number") from None
        missing = [k for k in ("hidden", "heads", "kv_heads", "ffn", "layers", "vocab") if k not in values]
        if missing:
            raise ConfigError(f"missing key(s): {', '.join(missing)}")
        return cls(**values)

    def to_json(self) -> dict:
        return asdict(self)


# --------------------------------------------------------------------------- the block

class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rope(x, cos, sin):
    """``x [batch, heads, seq, head_dim]``, ``cos``/``sin`` ``[seq, head_dim]``."""
    return x * cos + rotate_half(x) * sin


class Attention(nn.Module):
    def __init__(self, cfg: DecoderConfig):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = cfg.heads, cfg.kv_heads, cfg.head_dim
        self.q_proj = nn.Linear(cfg.hidden, cfg.heads * cfg.head_dim, bias=False)
        self.k_proj = nn.Linear(cfg.hidden, cfg.kv_heads * cfg.head_dim, bias=False)
        self.v_proj = nn.Linear(cfg.hidden, cfg.kv_heads * cfg.head_dim, bias=False)
        self.o_proj = nn.Linear(cfg.heads * cfg.head_dim, cfg.hidden, bias=False)

    def forward(self, x, cos, sin, past_k=None, past_v=None):
        """Returns (output, k, v) with k/v the rows of THIS call (for the cache). With no
        past, a causal prefill from position 0; with a past, one query that sees every
        cached row and itself, so no mask is needed."""
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        keys, values = k, v
        if past_k is not None:
            keys, values = torch.cat((past_k, k), dim=2), torch.cat((past_v, v), dim=2)
        # enable_gqa: the shared K/V heads are not copied out (the own-ops attention op
        # takes GQA natively); the scale is SDPA's default, 1/sqrt(head_dim).
        o = F.scaled_dot_product_attention(q, keys, values, is_causal=past_k is None,
                                           enable_gqa=self.heads != self.kv_heads)
        return self.o_proj(o.transpose(1, 2).reshape(b, s, self.heads * self.head_dim)), k, v


class MLP(nn.Module):
    def __init__(self, cfg: DecoderConfig):
        super().__init__()
        self.gate_proj = nn.Linear(cfg.hidden, cfg.ffn, bias=False)
        self.up_proj = nn.Linear(cfg.hidden, cfg.ffn, bias=False)
        self.down_proj = nn.Linear(cfg.ffn, cfg.hidden, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, cfg: DecoderConfig):
        super().__init__()
        self.input_layernorm = RMSNorm(cfg.hidden, cfg.eps)
        self.self_attn = Attention(cfg)
        self.post_attention_layernorm = RMSNorm(cfg.hidden, cfg.eps)
        self.mlp = MLP(cfg)

    def forward(self, x, cos, sin, past_k=None, past_v=None):
        a, k, v = self.self_attn(self.input_layernorm(x), cos, sin, past_k, past_v)
        x = x + a
        return x + self.mlp(self.post_attention_layernorm(x)), k, v


class Backbone(nn.Module):
    def __init__(self, cfg: DecoderConfig):
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg.vocab, cfg.hidden)
        self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.layers))
        self.norm = RMSNorm(cfg.hidden, cfg.eps)


def parameter_shapes(cfg: DecoderConfig) -> dict[str, tuple[int, ...]]:
    """Every parameter's Hugging Face name and shape, in ``state_dict()`` order, without
    building the model (a loader checks a checkpoint against this first)."""
    h, q, kv = cfg.hidden, cfg.heads * cfg.head_dim, cfg.kv_heads * cfg.head_dim
    out = {"model.embed_tokens.weight": (cfg.vocab, h)}
    for i in range(cfg.layers):
        p = f"model.layers.{i}."
        out.update({p + "input_layernorm.weight": (h,),
                    p + "self_attn.q_proj.weight": (q, h), p + "self_attn.k_proj.weight": (kv, h),
                    p + "self_attn.v_proj.weight": (kv, h), p + "self_attn.o_proj.weight": (h, q),
                    p + "post_attention_layernorm.weight": (h,),
                    p + "mlp.gate_proj.weight": (cfg.ffn, h), p + "mlp.up_proj.weight": (cfg.ffn, h),
                    p + "mlp.down_proj.weight": (h, cfg.ffn)})
    out["model.norm.weight"] = (h,)
    out["lm_head.weight"] = (cfg.vocab, h)
    return out


def rope_tables(cfg: DecoderConfig) -> tuple[torch.Tensor, torch.Tensor]:
    """cos/sin ``[max_seq, head_dim]`` in float32, computed in float64 so that a position
    near max_seq is as accurate as position 1."""
    d = cfg.head_dim
    inv = 1.0 / (cfg.rope_theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    angles = torch.outer(torch.arange(cfg.max_seq, dtype=torch.float64), inv)
    angles = torch.cat((angles, angles), dim=-1)
    return angles.cos().float(), angles.sin().float()


class DecoderLM(nn.Module):
    """The whole model. Built with seeded random weights (deterministic for a config, and
    independent of torch's global RNG); ``load_state_dict`` replaces them. With
    ``init=False`` the weights are left as torch's default init (a loader overwrites them)."""

    def __init__(self, cfg: DecoderConfig, *, init: bool = True):
        super().__init__()
        self.cfg = cfg
        self.model = Backbone(cfg)
        self.lm_head = nn.Linear(cfg.hidden, cfg.vocab, bias=False)
        cos, sin = rope_tables(cfg)
        # Not persistent: derived from the config, so not part of a checkpoint.
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        if init:   # a checkpoint's loader skips this: its weights replace them all
            self.reset_weights(cfg.seed)

    @torch.no_grad()
    def reset_weights(self, seed: int) -> None:
        """N(0, 1/fan_in) projections, with the two that write the residual stream (o_proj,
        down_proj) shrunk by 1/sqrt(2 layers) so the stream's RMS grows only ~sqrt(2) over
        any depth; N(0, 1) embeddings (the rows are the prefill's input); norm gains 1 ± 5%
        (not all ones, so a checkpoint that drops one is noticed); an LM head at 2/sqrt(hidden)
        so logits have an RMS of ~2 and greedy picks are rarely near-ties."""
        g = torch.Generator().manual_seed(int(seed))
        depth = 1.0 / math.sqrt(2.0 * self.cfg.layers)
        for name, p in self.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.05 * torch.randn(p.shape, generator=g))
            elif name == "model.embed_tokens.weight":
                p.copy_(torch.randn(p.shape, generator=g))
            else:
                std = p.shape[1] ** -0.5
                if name.endswith(("o_proj.weight", "down_proj.weight")):
                    std *= depth
                elif name == "lm_head.weight":
                    std *= 2.0
                p.copy_(std * torch.randn(p.shape, generator=g))

    # ----------------------------------------------------------------- phases

    def embed(self, ids):
        """Token ids ``[batch, seq]`` (int64) -> hidden states ``[batch, seq, hidden]``."""
        return self.model.embed_tokens(ids)

    def _run(self, x, cos, sin, kv=None):
        ks, vs = [], []
        for i, layer in enumerate(self.model.layers):
            past_k = None if kv is None else kv[i, 0]
            past_v = None if kv is None else kv[i, 1]
            x, k, v = layer(x, cos, sin, past_k, past_v)
            ks.append(k)
            vs.append(v)
        logits = self.lm_head(self.model.norm(x))
        return logits, torch.stack([torch.stack((k, v)) for k, v in zip(ks, vs)])

    def prefill(self, x):
        """``x [batch, seq, hidden]`` at positions 0..seq-1 -> (logits [batch, seq, vocab],
        kv [layers, 2, batch, kv_heads, seq, head_dim])."""
        s = x.shape[1]
        if s > self.cfg.max_seq:
            raise ValueError(f"prefill of {s} tokens is longer than max_seq={self.cfg.max_seq}")
        return self._run(x, self.rope_cos[:s], self.rope_sin[:s])

    def decode(self, x, kv):
        """One token ``x [batch, 1, hidden]`` at position ``past = kv.shape[4]`` against
        ``kv [layers, 2, batch, kv_heads, past, head_dim]`` -> (logits [batch, 1, vocab],
        kv_new [layers, 2, batch, kv_heads, 1, head_dim]): the rows for position ``past``."""
        if x.shape[1] != 1:
            raise ValueError(f"decode takes one token per sequence, got {x.shape[1]}")
        pos = kv.shape[4]
        if pos + 1 > self.cfg.max_seq:
            raise ValueError(f"decode at position {pos} is past max_seq={self.cfg.max_seq}")
        return self._run(x, self.rope_cos[pos:pos + 1], self.rope_sin[pos:pos + 1], kv)

    def prefill_ids(self, ids):
        return self.prefill(self.embed(ids))

    def decode_ids(self, ids, kv):
        return self.decode(self.embed(ids), kv)


class Prefill(nn.Module):
    """The prefill phase as a module of its own: ``forward(x)`` (what torch.export and the
    ONNX exporter capture)."""

    def __init__(self, lm: DecoderLM):
        super().__init__()
        self.lm = lm

    def forward(self, x):
        return self.lm.prefill(x)


class Decode(nn.Module):
    """The decode phase as a module of its own: ``forward(x, kv)``."""

    def __init__(self, lm: DecoderLM):
        super().__init__()
        self.lm = lm

    def forward(self, x, kv):
        return self.lm.decode(x, kv)
