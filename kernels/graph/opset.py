"""The IR's ops: what each one means (float64 NumPy) and what shape it makes.

One table, :data:`OPS`: name → :class:`Op` (its family, arity, a shape rule and a float64
implementation). The translation from captured ATen (:mod:`kernels.graph.aten`) only ever
produces these names, the interpreter runs them, and the code generator
(:mod:`kernels.codegen`) keys its C on them; a contract test holds the three together.

Families, which the partitioner groups by:

- ``pointwise``  elementwise with NumPy broadcasting (literals allowed as operands);
  comparisons and logic give ``bool`` masks, ``where`` selects with one;
- ``reduce``     over ``dims`` (sorted, non-negative), always keeping the reduced dims
  as size 1 (a ``reshape`` after it drops them);
- ``view``       ``reshape``, ``permute``, ``expand``, ``slice``: no arithmetic;
- ``cat``        concatenation along ``dim``;
- ``matmul``     ``a[..., M, K] @ b[..., K, N]`` with broadcast batch dims;
- ``attention``  ``softmax(q kᵀ · scale + mask) v`` (causal, grouped-query heads);
- ``scan``       inclusive ``cumsum``/``cumprod`` along ``dim``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np


class OpError(ValueError):
    """Operands or attributes an op cannot take; the message says which."""


@dataclass(frozen=True)
class Op:
    name: str
    family: str                 # pointwise | reduce | view | cat | matmul | attention
    arity: int | None           # None: variadic
    fn: Callable                # (list of operands, attrs) -> np.ndarray
    out_dtype: str = "f32"      # "bool" for comparisons and logic
    in_dtype: str = "f32"       # "bool": logical ops take masks; "any": where / casts
    doc: str = ""


def _erf(x):
    try:
        from scipy.special import erf
        return erf(x)
    except ImportError:   # scipy comes with kernel-tuner; keep a slow exact path anyway
        return np.vectorize(math.erf, otypes=[np.float64])(x)


def _sigmoid(x):
    # exp of a negative argument only: no overflow for either sign
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def _elu(x, a):
    neg = a.get("scale", 1.0) * a.get("alpha", 1.0) * np.expm1(np.minimum(x, 0.0) * a.get("input_scale", 1.0))
    return np.where(x > 0, a.get("scale", 1.0) * x, neg)


def _clamp(x, a):
    lo, hi = a.get("lo"), a.get("hi")
    if lo is not None:
        x = np.where(np.isnan(x), x, np.maximum(x, lo))
    if hi is not None:
        x = np.where(np.isnan(x), x, np.minimum(x, hi))
    return x


UNARY: dict[str, Callable] = {
    "neg": lambda x, a: -x,
    "abs": lambda x, a: np.abs(x),
    "exp": lambda x, a: np.exp(x),
    "exp2": lambda x, a: np.exp2(x),
    "expm1": lambda x, a: np.expm1(x),
    "log": lambda x, a: np.log(x),
    "log2": lambda x, a: np.log2(x),
    "log10": lambda x, a: np.log10(x),
    "log1p": lambda x, a: np.log1p(x),
    "sqrt": lambda x, a: np.sqrt(x),
    "rsqrt": lambda x, a: 1.0 / np.sqrt(x),
    "reciprocal": lambda x, a: 1.0 / x,
    "tanh": lambda x, a: np.tanh(x),
    "sigmoid": lambda x, a: _sigmoid(x),
    "relu": lambda x, a: np.where(np.isnan(x), x, np.maximum(x, 0.0)),
    "erf": lambda x, a: _erf(x),
    "gelu": lambda x, a: 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0))),
    "gelu_tanh": lambda x, a: _gelu_tanh(x),
    "silu": lambda x, a: x * _sigmoid(x),
    "sign": lambda x, a: np.sign(x),
    "floor": lambda x, a: np.floor(x),
    "ceil": lambda x, a: np.ceil(x),
    "round": lambda x, a: np.round(x),
    "trunc": lambda x, a: np.trunc(x),
    "sin": lambda x, a: np.sin(x),
    "cos": lambda x, a: np.cos(x),
    "leaky_relu": lambda x, a: np.where(x > 0, x, x * a["slope"]),
    "elu": _elu,
    "clamp": _clamp,
}
BINARY: dict[str, Callable] = {
    "add": lambda x, y: x + y,
    "sub": lambda x, y: x - y,
    "mul": lambda x, y: x * y,
    "div": lambda x, y: x / y,
    "pow": lambda x, y: np.power(x, y),
    "maximum": lambda x, y: np.maximum(x, y),
    "minimum": lambda x, y: np.minimum(x, y),
    "fmod": lambda x, y: np.fmod(x, y),
    "remainder": lambda x, y: np.mod(x, y),
    "floordiv": lambda x, y: np.floor(x / y),
}
COMPARE = {
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal,
}
LOGIC = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}
REDUCE = ("sum", "mean", "amax", "amin", "prod", "var")
VIEWS = ("reshape", "permute", "expand", "slice", "flip", "window")


def _reduce(xs, a):
    x, dims = xs[0], tuple(a["dims"])
    op = a["kind"]
    if op == "var":
        n = math.prod(x.shape[d] for d in dims)
        mean = x.mean(axis=dims, keepdims=True)
        return ((x - mean) ** 2).sum(axis=dims, keepdims=True) / (n - a.get("correction", 1))
    fn = {"sum": np.sum, "mean": np.mean, "amax": np.max, "amin": np.min, "prod": np.prod}[op]
    return fn(x, axis=dims, keepdims=True)


def _view(xs, a, kind):
    x = xs[0]
    if kind == "reshape":
        return x.reshape(a["shape"])
    if kind == "permute":
        return np.transpose(x, a["perm"])
    if kind == "expand":
        return np.broadcast_to(x, a["shape"])
    if kind == "flip":
        return np.flip(x, axis=tuple(a["dims"]))
    if kind == "window":   # a strided view, as in the generated code: nothing is copied
        d, size, step, dil = a["dim"], a["size"], a["step"], a["dilation"]
        span = dil * (size - 1) + 1
        w = np.lib.stride_tricks.sliding_window_view(x, span, axis=d)[..., ::dil]
        w = w[(slice(None),) * d + (slice(None, None, step),)]
        return np.moveaxis(w, -1, d + 1)
    index = [slice(None)] * x.ndim
    index[a["dim"]] = slice(a["start"], a["stop"], a["step"])
    return x[tuple(index)]


def window_count(n: int, size: int, step: int, dilation: int) -> int:
    """How many windows of ``size`` elements, ``dilation`` apart, start every ``step`` along
    ``n`` elements (the sliding windows of a convolution or a pooling, no padding)."""
    return (n - dilation * (size - 1) - 1) // step + 1


def attention(q, k, v, mask, attrs):
    """softmax(q·kᵀ·scale + mask) · v over the last two dims; ``gqa``: k/v have fewer heads
    (dim -3), each shared by ``heads(q) / heads(k)`` consecutive query heads."""
    if attrs.get("gqa") and k.shape[-3] != q.shape[-3]:
        rep = q.shape[-3] // k.shape[-3]
        k, v = np.repeat(k, rep, axis=-3), np.repeat(v, rep, axis=-3)
    scale = attrs.get("scale")
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = np.matmul(q, np.swapaxes(k, -1, -2)) * scale
    if attrs.get("causal"):
        L, S = q.shape[-2], k.shape[-2]
        s = np.where(np.tril(np.ones((L, S), dtype=bool)), s, -np.inf)
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    m = s.max(axis=-1, keepdims=True)
    e = np.exp(s - m)
    return np.matmul(e / e.sum(axis=-1, keepdims=True), v)


OPS: dict[str, Op] = {}
for _n, _f in UNARY.items():
    OPS[_n] = Op(_n, "pointwise", 1, (lambda f: lambda xs, a: f(xs[0], a))(_f))
for _n, _f in BINARY.items():
    OPS[_n] = Op(_n, "pointwise", 2, (lambda f: lambda xs, a: f(xs[0], xs[1]))(_f))
for _n, _f in COMPARE.items():
    OPS[_n] = Op(_n, "pointwise", 2, (lambda f: lambda xs, a: f(xs[0], xs[1]))(_f), out_dtype="bool")
for _n, _f in LOGIC.items():
    OPS[_n] = Op(_n, "pointwise", 2, (lambda f: lambda xs, a: f(xs[0], xs[1]))(_f), "bool", "bool")
OPS["not"] = Op("not", "pointwise", 1, lambda xs, a: np.logical_not(xs[0]), "bool", "bool")
OPS["where"] = Op("where", "pointwise", 3, lambda xs, a: np.where(xs[0], xs[1], xs[2]))
OPS["to_f32"] = Op("to_f32", "pointwise", 1, lambda xs, a: np.asarray(xs[0], dtype=np.float64), in_dtype="any")
OPS["to_bool"] = Op("to_bool", "pointwise", 1, lambda xs, a: np.asarray(xs[0]) != 0, "bool", "any")
for _n in REDUCE:
    OPS[_n] = Op(_n, "reduce", 1, (lambda k: lambda xs, a: _reduce(xs, {**a, "kind": k}))(_n))
for _n in VIEWS:
    OPS[_n] = Op(_n, "view", 1, (lambda k: lambda xs, a: _view(xs, a, k))(_n), in_dtype="any")
OPS["cat"] = Op("cat", "cat", None, lambda xs, a: np.concatenate(xs, axis=a["dim"]))
OPS["identity"] = Op("identity", "pointwise", 1, lambda xs, a: xs[0], in_dtype="any")
OPS["cumsum"] = Op("cumsum", "scan", 1, lambda xs, a: np.cumsum(xs[0], axis=a["dim"]))
OPS["cumprod"] = Op("cumprod", "scan", 1, lambda xs, a: np.cumprod(xs[0], axis=a["dim"]))
OPS["matmul"] = Op("matmul", "matmul", 2, lambda xs, a: np.matmul(xs[0], xs[1]))
OPS["attention"] = Op("attention", "attention", None,
                      lambda xs, a: attention(xs[0], xs[1], xs[2], xs[3] if len(xs) > 3 else None, a),
                      in_dtype="any")


def family(op: str) -> str:
    return OPS[op].family


# --------------------------------------------------------------------------- shape rules

def broadcast(*shapes) -> tuple[int, ...]:
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(rank):
        dims = {s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0} - {1}
        if len(dims) > 1:
            raise OpError(f"shapes {', '.join(str(list(s)) for s in shapes)} do not broadcast")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def infer(op: str, operands: list, attrs: dict) -> tuple[tuple[int, ...], str]:
    """(shape, dtype) of ``op`` on ``operands`` — each a (shape, dtype) pair or a literal."""
    if op not in OPS:
        raise OpError(f"unknown op {op!r}")
    spec = OPS[op]
    if spec.arity is not None and len(operands) != spec.arity:
        raise OpError(f"takes {spec.arity} operand(s), got {len(operands)}")
    tensors = [o for o in operands if isinstance(o, tuple)]
    if spec.family != "pointwise" and len(tensors) != len(operands):
        raise OpError("only pointwise ops take literal operands")
    for i, o in enumerate(operands):
        want = _operand_dtype(op, spec, i)
        if isinstance(o, tuple) and want is not None and o[1] != want:
            raise OpError(f"operand {i} is {o[1]}, expected {want}")
    fam = spec.family
    if fam == "pointwise":
        if not tensors:
            raise OpError("needs at least one tensor operand")
        shape = broadcast(*(t[0] for t in tensors))
        if op in ("identity",):
            return shape, tensors[0][1]
        return shape, spec.out_dtype
    (shape, dtype), rank = tensors[0], len(tensors[0][0])
    if fam == "reduce":
        dims = attrs.get("dims")
        if not isinstance(dims, list) or not dims or sorted(set(dims)) != dims or not all(
                isinstance(d, int) and 0 <= d < rank for d in dims):
            raise OpError(f"dims {dims!r} must be sorted distinct axes of a rank-{rank} tensor")
        return tuple(1 if i in dims else s for i, s in enumerate(shape)), "f32"
    if op == "reshape":
        new = tuple(attrs.get("shape", ()))
        if math.prod(new) != math.prod(shape) or not all(isinstance(d, int) and d >= 1 for d in new):
            raise OpError(f"cannot reshape {list(shape)} to {list(new)}")
        return new, dtype
    if op == "permute":
        perm = attrs.get("perm")
        if sorted(perm or []) != list(range(rank)):
            raise OpError(f"perm {perm!r} is not a permutation of {rank} axes")
        return tuple(shape[p] for p in perm), dtype
    if op == "expand":
        new = tuple(attrs.get("shape", ()))
        pad = (1,) * (len(new) - rank) + shape
        if len(new) < rank or any(s != 1 and s != n for s, n in zip(pad, new)):
            raise OpError(f"cannot expand {list(shape)} to {list(new)}")
        return new, dtype
    if op == "flip":
        dims = attrs.get("dims")
        if not isinstance(dims, list) or sorted(set(dims)) != dims or not all(0 <= d < rank for d in dims):
            raise OpError(f"flip dims {dims!r} must be sorted distinct axes")
        return shape, dtype
    if op == "window":
        d, size, step, dil = (attrs.get(k) for k in ("dim", "size", "step", "dilation"))
        if not (isinstance(d, int) and 0 <= d < rank and all(isinstance(v, int) and v >= 1 for v in (size, step, dil))
                and dil * (size - 1) < shape[d]):
            raise OpError(f"window {attrs} does not fit {list(shape)}")
        return shape[:d] + (window_count(shape[d], size, step, dil), size) + shape[d + 1:], dtype
    if op == "slice":
        d, start, stop, step = (attrs.get(k) for k in ("dim", "start", "stop", "step"))
        if not (isinstance(d, int) and 0 <= d < rank and isinstance(step, int) and step >= 1
                and 0 <= start < stop <= shape[d]):
            raise OpError(f"slice {attrs} is out of range for {list(shape)}")
        return shape[:d] + (len(range(start, stop, step)),) + shape[d + 1:], dtype
    if op == "cat":
        d = attrs.get("dim")
        if not isinstance(d, int) or not 0 <= d < rank or len(tensors) < 1:
            raise OpError(f"cat dim {d!r} is out of range")
        for t in tensors:
            if len(t[0]) != rank or any(a != b for i, (a, b) in enumerate(zip(t[0], shape)) if i != d):
                raise OpError(f"cannot concatenate {list(t[0])} with {list(shape)} along dim {d}")
        return shape[:d] + (sum(t[0][d] for t in tensors),) + shape[d + 1:], "f32"
    if fam == "scan":
        d = attrs.get("dim")
        if not isinstance(d, int) or not 0 <= d < rank:
            raise OpError(f"scan dim {d!r} is out of range")
        return shape, "f32"
    if op == "matmul":
        (sa, _), (sb, _) = tensors
        if len(sa) < 2 or len(sb) < 2 or sa[-1] != sb[-2]:
            raise OpError(f"cannot multiply {list(sa)} by {list(sb)}")
        return broadcast(sa[:-2], sb[:-2]) + (sa[-2], sb[-1]), "f32"
    if op == "attention":
        if len(tensors) not in (3, 4):
            raise OpError("takes q, k, v and an optional mask")
        (sq, _), (sk, _), (sv, _) = tensors[:3]
        if len(sq) < 3 or len(sk) != len(sq) or len(sv) != len(sq):
            raise OpError("q, k and v need the same rank, at least 3")
        if sk[-1] != sq[-1] or sv[-2] != sk[-2] or sk[:-3] != sq[:-3] or sv[:-2] != sk[:-2]:
            raise OpError(f"q {list(sq)}, k {list(sk)}, v {list(sv)} do not fit together")
        if sk[-3] != sq[-3] and not (attrs.get("gqa") and sq[-3] % sk[-3] == 0):
            raise OpError(f"{sq[-3]} query heads and {sk[-3]} key heads need enable_gqa")
        if len(tensors) == 4:
            broadcast(tensors[3][0], sq[:-1] + (sk[-2],))
        return sq[:-1] + (sv[-1],), "f32"
    raise OpError(f"no shape rule for {op}")


def _operand_dtype(op: str, spec: Op, i: int) -> str | None:
    """The dtype operand ``i`` must have (None: either)."""
    if op == "where":
        return "bool" if i == 0 else "f32"
    if op == "attention":
        return None if i == 3 else "f32"
    if spec.in_dtype == "any":
        return None
    return spec.in_dtype


def evaluate(op: str, operands: list, attrs: dict) -> np.ndarray:
    """Float64 (or bool) result of ``op``; operands are arrays or Python numbers."""
    with np.errstate(all="ignore"):
        out = OPS[op].fn(operands, attrs)
    out = np.asarray(out)
    return out if out.dtype == np.bool_ else out.astype(np.float64, copy=False)
