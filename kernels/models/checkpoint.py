"""Local safetensors checkpoints with a Llama-style ``config.json``, into the decoder family.

A checkpoint is a directory: ``config.json`` (Hugging Face names) and either one
``model.safetensors`` or shards listed by ``model.safetensors.index.json``. Only a local path
is ever read; nothing is downloaded, and a name that is not a directory here (a hub id, say)
is an error that says so. safetensors holds raw arrays (no pickle), so reading a checkpoint
runs none of its author's code; ``torch.load`` is never used.

Every way a checkpoint can fail to be this family is a :class:`CheckpointError` whose
message names the file and the key or tensor at fault: a missing or malformed config key, a
feature the family does not have (biases, another activation, RoPE scaling, a head_dim that
is not hidden/heads), a missing, unexpected, mis-shaped or non-float tensor.
"""
from __future__ import annotations

import json
from pathlib import Path

import torch

from kernels.models.decoder import ConfigError, DecoderConfig, DecoderLM, parameter_shapes

CONFIG = "config.json"
SINGLE = "model.safetensors"
INDEX = "model.safetensors.index.json"

# Hugging Face key -> our key. The first six are required; the rest have HF's defaults.
REQUIRED = {"hidden_size": "hidden", "num_attention_heads": "heads", "intermediate_size": "ffn",
            "num_hidden_layers": "layers", "vocab_size": "vocab"}
OPTIONAL = {"num_key_value_heads": "kv_heads", "rms_norm_eps": "eps", "rope_theta": "rope_theta"}
# The RoPE table is [max_seq, head_dim] floats twice; a config's max_position_embeddings
# (131072 for some models) would make it hundreds of MB for lengths nobody runs here.
MAX_SEQ_CAP = 8192
# Buffers some older exports saved; they are derived from the config, so they are skipped.
DERIVED_SUFFIXES = ("rotary_emb.inv_freq",)


class CheckpointError(ValueError):
    """A checkpoint that cannot be read as the decoder family; the message names the file
    and the key or tensor at fault."""


def read_config(path, *, max_seq: int | None = None, seed: int = 0) -> DecoderConfig:
    """The :class:`DecoderConfig` of the checkpoint at ``path`` (a directory or its
    config.json). ``max_seq`` defaults to the config's ``max_position_embeddings`` capped at
    :data:`MAX_SEQ_CAP`."""
    file = _dir(path) / CONFIG
    if not file.is_file():
        raise CheckpointError(f"{file}: no {CONFIG} (a checkpoint directory needs one)")
    try:
        raw = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{file}: not readable JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise CheckpointError(f"{file}: expected a JSON object, got {type(raw).__name__}")
    _refuse_features(file, raw)
    values = {}
    for hf, ours in REQUIRED.items():
        if hf not in raw:
            raise CheckpointError(f"{file}: missing key {hf!r} (the family's {ours})")
        values[ours] = _int(file, hf, raw[hf])
    values["kv_heads"] = _int(file, "num_key_value_heads", raw.get("num_key_value_heads", values["heads"]))
    for hf in ("rms_norm_eps", "rope_theta"):
        if raw.get(hf) is not None:
            values[OPTIONAL[hf]] = _float(file, hf, raw[hf])
    if max_seq is None:
        max_seq = min(_int(file, "max_position_embeddings", raw.get("max_position_embeddings", 2048)), MAX_SEQ_CAP)
    try:
        cfg = DecoderConfig(**values, max_seq=int(max_seq), seed=seed)
    except ConfigError as exc:
        raise CheckpointError(f"{file}: {exc}") from None
    head_dim = raw.get("head_dim")
    if head_dim is not None and head_dim != cfg.head_dim:
        raise CheckpointError(f"{file}: head_dim={head_dim} differs from hidden_size/num_attention_heads="
                              f"{cfg.head_dim}; the family has no separate head_dim")
    return cfg


def load_checkpoint(path, *, max_seq: int | None = None) -> DecoderLM:
    """A :class:`DecoderLM` (eval mode, float32) with the checkpoint's weights. Tensors
    stored as float16/bfloat16 are widened to float32."""
    cfg = read_config(path, max_seq=max_seq)
    lm = DecoderLM(cfg, init=False).eval()
    lm.load_state_dict(load_weights(path, cfg), strict=True)
    return lm


def load_weights(path, cfg: DecoderConfig) -> dict[str, torch.Tensor]:
    """Every parameter of ``cfg``'s model, by its Hugging Face name, checked against the
    shapes ``cfg`` implies. With ``tie_word_embeddings`` and no ``lm_head.weight`` the LM
    head is the embedding, as Hugging Face does it."""
    root = _dir(path)
    stored = _tensors(root)          # name -> (file, loader)
    expected = parameter_shapes(cfg)
    tied = _tied(root) and "lm_head.weight" not in stored
    out = {}
    for name, shape in expected.items():
        source = "model.embed_tokens.weight" if tied and name == "lm_head.weight" else name
        if source not in stored:
            raise CheckpointError(f"{root}: missing tensor {name!r} (shape {shape})")
        file, load = stored[source]
        t = load()
        if not t.is_floating_point():
            raise CheckpointError(f"{file}: tensor {source!r} is {t.dtype}, expected a float dtype")
        if tuple(t.shape) != shape:
            raise CheckpointError(f"{file}: tensor {source!r} has shape {tuple(t.shape)}, "
                                  f"config.json implies {shape}")
        out[name] = t.to(torch.float32).contiguous()
    unexpected = sorted(n for n in stored if n not in expected and not n.endswith(DERIVED_SUFFIXES))
    if unexpected:
        more = f" (and {len(unexpected) - 1} more)" if len(unexpected) > 1 else ""
        raise CheckpointError(f"{stored[unexpected[0]][0]}: unexpected tensor {unexpected[0]!r}{more}; "
                              "the decoder family has no such parameter")
    return out


def save_checkpoint(lm: DecoderLM, path, *, max_position_embeddings: int | None = None) -> Path:
    """Write ``lm`` as a Hugging Face-style checkpoint (config.json + model.safetensors)
    into the directory ``path`` (created); returns it. For tests and the demo."""
    from safetensors.torch import save_file

    root = Path(path)
    root.mkdir(parents=True, exist_ok=True)
    cfg = lm.cfg
    config = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "hidden_size": cfg.hidden, "num_attention_heads": cfg.heads, "num_key_value_heads": cfg.kv_heads,
        "intermediate_size": cfg.ffn, "num_hidden_layers": cfg.layers, "vocab_size": cfg.vocab,
        "rms_norm_eps": cfg.eps, "rope_theta": cfg.rope_theta, "hidden_act": "silu",
        "max_position_embeddings": max_position_embeddings or cfg.max_seq,
        "tie_word_embeddings": False, "attention_bias": False, "mlp_bias": False, "torch_dtype": "float32",
    }
    (root / CONFIG).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    tensors = {k: v.detach().to(torch.float32).contiguous() for k, v in lm.state_dict().items()}
    save_file(tensors, str(root / SINGLE), metadata={"format": "pt"})
    return root


# --------------------------------------------------------------------------- helpers

def _dir(path) -> Path:
    p = Path(path)
    if p.name == CONFIG:
        p = p.parent
    if not p.is_dir():
        raise CheckpointError(f"{p}: not a directory here; checkpoints are read from a local path "
                              "(config.json + *.safetensors) and nothing is downloaded")
    return p


def _refuse_features(file: Path, raw: dict) -> None:
    act = raw.get("hidden_act", "silu")
    if act not in ("silu", "swish"):
        raise CheckpointError(f"{file}: hidden_act={act!r}; the family's MLP is SwiGLU (silu)")
    for key in ("attention_bias", "mlp_bias"):
        if raw.get(key):
            raise CheckpointError(f"{file}: {key}=true; the family's projections have no biases")
    if raw.get("rope_scaling"):
        raise CheckpointError(f"{file}: rope_scaling={raw['rope_scaling']!r} is not supported (plain RoPE only)")


def _int(file: Path, key: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise CheckpointError(f"{file}: {key} must be an integer, got {value!r}")
    return value


def _float(file: Path, key: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise CheckpointError(f"{file}: {key} must be a number, got {value!r}")
    return float(value)


def _tied(root: Path) -> bool:
    try:
        return bool(json.loads((root / CONFIG).read_text(encoding="utf-8")).get("tie_word_embeddings", False))
    except (OSError, ValueError):
        return False


def _tensors(root: Path) -> dict:
    """name -> (file, zero-argument loader) over the single file or every shard."""
    from safetensors import SafetensorError, safe_open

    if (root / INDEX).is_file():
        try:
            weight_map = json.loads((root / INDEX).read_text(encoding="utf-8"))["weight_map"]
            files = sorted(set(weight_map.values()))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise CheckpointError(f"{root / INDEX}: no usable weight_map ({exc})") from None
    elif (root / SINGLE).is_file():
        files = [SINGLE]
    else:
        raise CheckpointError(f"{root}: no {SINGLE} and no {INDEX}")
    out = {}
    for name in files:
        file = root / name
        if file.parent != root or not file.is_file():
            raise CheckpointError(f"{root / INDEX}: shard {name!r} is not a file in the checkpoint directory")
        try:
            with safe_open(str(file), framework="pt") as f:
                keys = list(f.keys())
        except (SafetensorError, OSError, ValueError) as exc:
            raise CheckpointError(f"{file}: not a readable safetensors file ({exc})") from None
        for key in keys:
            if key in out:
                raise CheckpointError(f"{file}: tensor {key!r} is also in {out[key][0]}")
            out[key] = (file, _loader(file, key))
    return out


def _loader(file: Path, key: str):
    def load():
        from safetensors import safe_open
        with safe_open(str(file), framework="pt") as f:
            return f.get_tensor(key)
    return load

