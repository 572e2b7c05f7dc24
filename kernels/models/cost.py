"""What one phase call of the decoder family costs: FLOPs and bytes, for rooflines.

FLOPs count the matrix products (2 per multiply-add): the projections, the MLP, the LM head,
and attention's two products over the keys each query sees (causal: query i sees i + 1).
Norms, RoPE, SiLU and softmax are O(tokens x hidden) and left out (under 1% at the
benchmark's sizes). Bytes count what a step must read at least once: every weight but the
embedding (the driver reads one row per token) and, for decode, the KV cache.
"""
from kernels.models.decoder import DecoderConfig, parameter_shapes


def matmul_params(cfg: DecoderConfig) -> int:
    """Weights that multiply every token: all projections and the LM head."""
    return sum(shape[0] * shape[1] for name, shape in parameter_shapes(cfg).items()
               if len(shape) == 2 and name != "model.embed_tokens.weight")


def flops(cfg: DecoderConfig, phase: str, *, batch: int = 1, seq: int = 1, past: int = 0) -> float:
    """FLOPs of one call: prefill of ``seq`` tokens, or decode of one token after ``past``."""
    if phase == "prefill":
        tokens, keys = seq, seq * (seq + 1) // 2
    elif phase == "decode":
        tokens, keys = 1, past + 1
    else:
        raise ValueError(f"phase must be prefill or decode, got {phase!r}")
    attention = 4 * cfg.heads * cfg.head_dim * keys * cfg.layers
    return float(batch * (2 * tokens * matmul_params(cfg) + attention))


def weight_bytes(cfg: DecoderConfig) -> int:
    """float32 bytes of every weight a step reads (all but the embedding table)."""
    n = 0
    for name, shape in parameter_shapes(cfg).items():
        if name != "model.embed_tokens.weight":
            size = 1
            for d in shape:
                size *= d
            n += size
    return 4 * n


def kv_bytes(cfg: DecoderConfig, *, batch: int = 1, positions: int = 0) -> int:
    """float32 bytes of a KV cache of ``positions`` rows (what a decode step reads)."""
    return 4 * cfg.layers * 2 * batch * cfg.kv_heads * positions * cfg.head_dim
