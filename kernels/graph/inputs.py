"""Inputs for an imported workload: what ``get_inputs()`` draws, and stress distributions.

:func:`infer` reads the seeded samples the capture returned (data, never code) and says
per input what it looks like: ``uniform`` over [low, high) (``torch.rand``-like), small
``integers``, or ``normal`` with the observed mean and spread (``torch.randn``-like).
:func:`draw` makes a fresh input of any shape from such a description and a distribution
name:

- ``model``    as ``get_inputs()`` draws it;
- ``large``    scaled up, ``tiny`` scaled down: by the furthest factor (tried at import on
  the trusted interpreter) at which every intermediate stays finite and inside float32;
- ``mixed``    signs and magnitudes over four decades (positive only for inputs that are
  never negative, e.g. ``log(x)`` of ``rand``);
- ``masked``   ``model`` with a fifth of the entries of some inputs set to -inf, offered only
  when the graph has a max-subtracting reduction (softmax, logsumexp) and the reference
  stays free of NaN.
"""
from __future__ import annotations

import math

import numpy as np

from kernels.graph import interpreter
from kernels.graph.ir import Graph

LARGE = (1e3, 1e2, 30.0, 10.0, 3.0)
TINY = (1e-6, 1e-4, 1e-2, 0.1)
FLOAT32_SAFE = 1e37


def infer(arrays: list) -> dict:
    """A description of how the samples of one input were drawn."""
    flat = np.concatenate([np.asarray(a, dtype=np.float64).reshape(-1) for a in arrays])
    flat = flat[np.isfinite(flat)]
    if flat.size == 0:
        return {"kind": "normal", "mean": 0.0, "std": 1.0}
    lo, hi = float(flat.min()), float(flat.max())
    mean, std = float(flat.mean()), float(flat.std())
    ints = np.all(flat == np.round(flat)) and hi - lo <= 1024
    if ints:
        return {"kind": "integers", "low": int(lo), "high": int(hi)}
    span = hi - lo
    if span > 0 and flat.size >= 16:
        # a uniform's spread is span/sqrt(12); a normal's sample span is ~6+ sigmas
        if abs(std - span / math.sqrt(12)) < 0.08 * span / math.sqrt(12):
            return {"kind": "uniform", "low": _nice(lo, span, down=True), "high": _nice(hi, span, down=False)}
    return {"kind": "normal", "mean": round(mean, 3), "std": round(std, 3) or 1.0}


def _nice(v: float, span: float, down: bool) -> float:
    step = 10 ** math.floor(math.log10(span)) / 10
    return float((math.floor if down else math.ceil)(v / step) * step)


def nonnegative(desc: dict) -> bool:
    return desc["kind"] in ("uniform", "integers") and desc.get("low", -1) >= 0


def draw(desc: dict, shape, distribution: str, rng: np.random.Generator, stress: dict) -> np.ndarray:
    kind = desc["kind"]
    if kind == "uniform":
        x = rng.uniform(desc["low"], desc["high"], shape)
    elif kind == "integers":
        x = rng.integers(desc["low"], desc["high"] + 1, shape).astype(np.float64)
    else:
        x = rng.standard_normal(shape) * desc["std"] + desc["mean"]
    if distribution == "large":
        x = x * stress.get("large", 10.0)
    elif distribution == "tiny":
        x = x * stress.get("tiny", 1e-3)
    elif distribution == "mixed":
        mag = 10.0 ** rng.uniform(-2, 2, shape) * 0.1
        x = mag if nonnegative(desc) else mag * rng.choice([-1.0, 1.0], shape)
    return x


def masked(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A fifth of the entries -inf, never a whole last-dim row (the first entry stays)."""
    x = np.array(x, dtype=np.float64)
    hole = rng.random(x.shape) < 0.2
    if x.ndim:
        hole[..., 0] = False
    x[hole] = -np.inf
    return x


# --------------------------------------------------------------------------- stress search

def _safe(graph: Graph, feeds: dict, tol=None, allow_neg_inf: bool = False) -> bool:
    """Every intermediate finite and inside float32 (masked: -inf allowed, NaN never), and a
    plain float32 evaluation (each op rounded to float32) within ``tol`` of the float64 one:
    inputs on which no float32 kernel can be right (a product of tiny values underflowing)
    are not a test of the kernel."""
    ok = [True]

    def observe(name, v):
        if not ok[0] or v.dtype == np.bool_:
            return
        if allow_neg_inf:
            bad = np.isnan(v).any() or (v == np.inf).any() or (np.abs(v[np.isfinite(v)]) > FLOAT32_SAFE).any()
        else:
            bad = not np.isfinite(v).all() or (np.abs(v) > FLOAT32_SAFE).any()
        if bad:
            ok[0] = False
    with np.errstate(all="ignore"):
        outs = interpreter.run(graph, feeds, observe=observe)
    if not ok[0] or (allow_neg_inf and any(np.isnan(o).any() for o in outs)):
        return False
    if tol is None:
        return True
    from kernels.harness.verify import compare
    with np.errstate(all="ignore"):
        plain = interpreter.run(graph, feeds, float32=True)
    return all(compare(p.astype(np.float32), o, tol)["passed"] for p, o in zip(plain, outs))


def search_stress(graph: Graph, params: dict, descs: dict, seed: int = 7, tol=None) -> dict:
    """The stress settings for this graph: scales for ``large``/``tiny`` (None: not offered),
    whether ``mixed`` is safe, and which inputs ``masked`` may mask (empty: not offered)."""
    rng = np.random.default_rng(seed)
    base = {t.name: draw(descs[t.name], t.shape, "model", rng, {}) for t in graph.inputs}
    out = {"large": None, "tiny": None, "mixed": False, "masked": []}
    if not _safe(graph, {**base, **params}, tol):
        return out
    for key, scales in (("large", LARGE), ("tiny", TINY)):
        for s in scales:
            feeds = {n: v * s for n, v in base.items()}
            if _safe(graph, {**feeds, **params}, tol):
                out[key] = s
                break
    mixed = {t.name: draw(descs[t.name], t.shape, "mixed", rng, {}) for t in graph.inputs}
    out["mixed"] = _safe(graph, {**mixed, **params}, tol)
    if any(n.op == "amax" for n in graph.nodes) and any(n.op == "exp" for n in graph.nodes):
        names = [t.name for t in graph.inputs]
        for subset in [names] + [[n] for n in names]:
            feeds = dict(base)
            for n in subset:
                feeds[n] = masked(base[n], rng)
            if _safe(graph, {**feeds, **params}, tol, allow_neg_inf=True):
                out["masked"] = subset
                break
    return out


def distributions(stress: dict) -> tuple[str, ...]:
    out = ["model"]
    if stress.get("large"):
        out.append("large")
    if stress.get("tiny"):
        out.append("tiny")
    if stress.get("mixed"):
        out.append("mixed")
    if stress.get("masked"):
        out.append("masked")
    return tuple(out)
