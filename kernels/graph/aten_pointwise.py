"""Handlers for elementwise ATen ops and the constructors folded into constants."""
from __future__ import annotations

import numpy as np

from kernels.graph.aten_base import HANDLERS, as_bool, f32, reg, shp
from kernels.graph.translate import Unsupported, Val

# --------------------------------------------------------------------------- pointwise

UNARY = {"neg": "neg", "abs": "abs", "exp": "exp", "exp2": "exp2", "expm1": "expm1", "log": "log",
         "log2": "log2", "log10": "log10", "log1p": "log1p", "sqrt": "sqrt", "rsqrt": "rsqrt",
         "reciprocal": "reciprocal", "tanh": "tanh", "sigmoid": "sigmoid", "relu": "relu", "erf": "erf",
         "sign": "sign", "floor": "floor", "ceil": "ceil", "round": "round", "trunc": "trunc",
         "sin": "sin", "cos": "cos", "silu": "silu"}
for _t, _op in UNARY.items():
    HANDLERS[f"aten.{_t}.default"] = (lambda op: lambda b, r, x, *a, **k: b.op(op, f32(b, x)))(_op)

BINARY = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "maximum": "maximum", "minimum": "minimum",
          "fmax": "maximum", "fmin": "minimum", "fmod": "fmod", "remainder": "remainder",
          "floor_divide": "floordiv"}


def _binary(op):
    def fn(b, r, x, y, alpha=1, **k):
        x, y = f32(b, x), f32(b, y)
        if alpha != 1 and op in ("add", "sub"):
            y = b.op("mul", y, alpha)
        return b.op(op, x, y)
    return fn


for _t, _op in BINARY.items():
    for _v in ("Tensor", "Scalar", "default"):
        HANDLERS[f"aten.{_t}.{_v}"] = _binary(_op)

for _t in ("eq", "ne", "lt", "le", "gt", "ge"):
    for _v in ("Tensor", "Scalar"):
        HANDLERS[f"aten.{_t}.{_v}"] = (lambda op: lambda b, r, x, y: b.op(op, f32(b, x), f32(b, y)))(_t)
for _t, _op in (("logical_and", "and"), ("logical_or", "or"), ("logical_xor", "xor"),
                ("bitwise_and", "and"), ("bitwise_or", "or"), ("bitwise_xor", "xor")):
    for _v in ("default", "Tensor"):
        HANDLERS[f"aten.{_t}.{_v}"] = (lambda op: lambda b, r, x, y: b.op(op, as_bool(b, x), as_bool(b, y)))(_op)


@reg("aten.logical_not.default", "aten.bitwise_not.default")
def _not(b, r, x):
    return b.op("not", as_bool(b, x))


@reg("aten.isnan.default")
def _isnan(b, r, x):
    x = f32(b, x)
    return b.op("ne", x, x)


@reg("aten.isinf.default")
def _isinf(b, r, x):
    return b.op("eq", b.op("abs", f32(b, x)), float("inf"))


@reg("aten.isfinite.default")
def _isfinite(b, r, x):
    x = f32(b, x)
    return b.op("lt", b.op("abs", x), float("inf"))


@reg("aten.rsub.Scalar", "aten.rsub.Tensor")
def _rsub(b, r, x, y, alpha=1):
    x = f32(b, x)
    return b.op("sub", f32(b, y), x if alpha == 1 else b.op("mul", x, alpha))


@reg("aten.div.Tensor_mode", "aten.div.Scalar_mode")
def _div_mode(b, r, x, y, rounding_mode=None):
    x, y = f32(b, x), f32(b, y)
    if rounding_mode == "floor":
        return b.op("floordiv", x, y)
    q = b.op("div", x, y)
    return b.op("trunc", q) if rounding_mode == "trunc" else q


@reg("aten.pow.Tensor_Scalar", "aten.pow.Tensor_Tensor", "aten.pow.Scalar")
def _pow(b, r, x, y):
    return b.op("pow", f32(b, x), f32(b, y))


@reg("aten.where.self")
def _where(b, r, c, x, y):
    return b.op("where", as_bool(b, c), f32(b, x), f32(b, y))


@reg("aten.masked_fill.Scalar", "aten.masked_fill.Tensor")
def _masked_fill(b, r, x, mask, value):
    return b.op("where", as_bool(b, mask), f32(b, value), f32(b, x))


@reg("aten.gelu.default")
def _gelu(b, r, x, approximate="none"):
    return b.op("gelu_tanh" if approximate == "tanh" else "gelu", f32(b, x))


@reg("aten.leaky_relu.default")
def _leaky(b, r, x, negative_slope=0.01):
    return b.op("leaky_relu", f32(b, x), slope=float(negative_slope))


@reg("aten.elu.default")
def _elu(b, r, x, alpha=1.0, scale=1.0, input_scale=1.0):
    return b.op("elu", f32(b, x), alpha=float(alpha), scale=float(scale), input_scale=float(input_scale))


def _clamp_scalars(b, x, lo, hi):
    attrs = {"lo": None if lo is None else float(lo), "hi": None if hi is None else float(hi)}
    return b.op("clamp", f32(b, x), **attrs)


@reg("aten.clamp.default")
def _clamp(b, r, x, min=None, max=None):
    return _clamp_scalars(b, x, min, max)


@reg("aten.clamp_min.default")
def _clamp_min(b, r, x, min):
    return _clamp_scalars(b, x, min, None)


@reg("aten.clamp_max.default")
def _clamp_max(b, r, x, max):
    return _clamp_scalars(b, x, None, max)


@reg("aten.hardtanh.default")
def _hardtanh(b, r, x, min_val=-1.0, max_val=1.0):
    return _clamp_scalars(b, x, min_val, max_val)


@reg("aten.clamp.Tensor")
def _clamp_t(b, r, x, min=None, max=None):
    x = f32(b, x)
    if min is not None:
        x = b.op("maximum", x, f32(b, min))
    if max is not None:
        x = b.op("minimum", x, f32(b, max))
    return x


@reg("aten.softplus.default")
def _softplus(b, r, x, beta=1.0, threshold=20.0):
    x = f32(b, x)
    bx = b.op("mul", x, float(beta)) if beta != 1 else x
    soft = b.op("log1p", b.op("exp", bx))
    if beta != 1:
        soft = b.op("div", soft, float(beta))
    return b.op("where", b.op("gt", bx, float(threshold)), x, soft)


@reg("aten.hardswish.default")
def _hardswish(b, r, x):
    x = f32(b, x)
    return b.op("div", b.op("mul", x, b.op("clamp", b.op("add", x, 3.0), lo=0.0, hi=6.0)), 6.0)


@reg("aten.hardsigmoid.default")
def _hardsigmoid(b, r, x):
    return b.op("div", b.op("clamp", b.op("add", f32(b, x), 3.0), lo=0.0, hi=6.0), 6.0)


@reg("aten.mish.default")
def _mish(b, r, x):
    x = f32(b, x)
    return b.op("mul", x, b.op("tanh", _softplus(b, r, x)))


@reg("aten.threshold.default")
def _threshold(b, r, x, threshold, value):
    x = f32(b, x)
    return b.op("where", b.op("gt", x, float(threshold)), x, float(value))


@reg("aten._to_copy.default")
def _to_copy(b, r, x, dtype=None, **kwargs):
    want = dtype.get("dtype") if isinstance(dtype, dict) else None
    if want in (None, "torch.float32"):
        return f32(b, x)
    if want == "torch.bool":
        return as_bool(b, x)
    if want in ("torch.int64", "torch.int32") and isinstance(x, Val) and x.const is not None:
        return Val(const=np.trunc(x.const).astype(np.int64))   # positions computed from arange: folded
    raise Unsupported(f"node {r['name']} converts to {want}; only float32 (and bool masks) are supported",
                      node=r["name"], op="aten._to_copy.default", kind="dtype")


@reg("aten.clone.default", "aten.alias.default", "aten.lift_fresh_copy.default", "aten.detach.default",
     "aten.contiguous.default")
def _same(b, r, x, *a, **k):
    return x


@reg("aten._assert_tensor_metadata.default", "aten._assert_scalar.default", "aten.sym_constrain_range_for_size.default",
     "aten._assert_async.msg", "aten._assert_async.default")
def _nothing(b, r, *a, **k):
    return None


# --------------------------------------------------------------------------- constants (folded)

def _np_dtype(dtype, values) -> type:
    want = dtype.get("dtype") if isinstance(dtype, dict) else None
    if want == "torch.bool":
        return np.bool_
    if want in ("torch.int64", "torch.int32", "torch.long", "torch.int"):
        return np.int64
    if want is None and all(isinstance(v, (int, bool)) and not isinstance(v, float) for v in values):
        return np.int64 if not all(isinstance(v, bool) for v in values) else np.bool_
    return np.float64


@reg("aten.full.default")
def _full(b, r, size, fill_value, dtype=None, **k):
    return Val(const=np.full(tuple(size), fill_value, dtype=_np_dtype(dtype, [fill_value])))


@reg("aten.full_like.default")
def _full_like(b, r, x, fill_value, dtype=None, **k):
    return Val(const=np.full(shp(x), fill_value, dtype=_np_dtype(dtype, [float(fill_value)])))


@reg("aten.zeros.default", "aten.ones.default")
def _zeros(b, r, size, dtype=None, **k):
    return Val(const=np.full(tuple(size), 1.0 if "ones" in r["target"] else 0.0, dtype=_np_dtype(dtype, [0.0])))


@reg("aten.zeros_like.default", "aten.ones_like.default")
def _zeros_like(b, r, x, dtype=None, **k):
    return Val(const=np.full(shp(x), 1.0 if "ones" in r["target"] else 0.0, dtype=_np_dtype(dtype, [0.0])))


@reg("aten.new_zeros.default", "aten.new_ones.default")
def _new_zeros(b, r, x, size, dtype=None, **k):
    return Val(const=np.full(tuple(size), 1.0 if "ones" in r["target"] else 0.0, dtype=_np_dtype(dtype, [0.0])))


@reg("aten.new_full.default")
def _new_full(b, r, x, size, fill_value, dtype=None, **k):
    return Val(const=np.full(tuple(size), fill_value, dtype=_np_dtype(dtype, [float(fill_value)])))


@reg("aten.scalar_tensor.default")
def _scalar_tensor(b, r, value, dtype=None, **k):
    return Val(const=np.asarray(value, dtype=_np_dtype(dtype, [float(value)])))


@reg("aten.arange.default", "aten.arange.start", "aten.arange.start_step")
def _arange(b, r, *args, dtype=None, **k):
    values = list(args)
    return Val(const=np.arange(*values, dtype=_np_dtype(dtype, values)))
