"""The supported core-ATen targets, and the walk that turns captured records into IR.

``HANDLERS`` maps a target's name as torch prints it (``aten.addmm.default``) to a function
``(builder, record, *args, **kwargs) -> Val | None`` that emits the equivalent IR through
:class:`~kernels.graph.translate.Builder`. Norms, softmax and friends are spelled in IR
primitives (reductions + pointwise), which the code generator fuses back together; attention
stays one op. Anything not in the table is refused by name (``UNSUPPORTED_WHY`` words the
common families: convolutions, pooling, indexing, scans, sorting).
"""
from __future__ import annotations

import math

import numpy as np

from kernels.graph.ir import Tensor
from kernels.graph.translate import (TORCH_DTYPES, Builder, Unsupported, Val, c_name, finish,
                                     normalise_dims, torch_shape)

HANDLERS: dict = {}

UNSUPPORTED_WHY = {
    "convolution": "convolutions are not supported yet", "conv": "convolutions are not supported yet",
    "pool": "pooling is not supported yet", "index": "indexing by tensors is not supported",
    "gather": "gather/scatter are not supported", "scatter": "gather/scatter are not supported",
    "cumsum": "scans (cumsum/cumprod) are not supported", "cumprod": "scans are not supported",
    "sort": "sorting is not supported", "topk": "top-k is not supported",
    "argmax": "argmax/argmin produce integer tensors, which are not supported",
    "argmin": "argmax/argmin produce integer tensors, which are not supported",
    "embedding": "embedding lookups (integer indices) are not supported",
    "pad": "padding is not supported yet", "flip": "flip is not supported", "roll": "roll is not supported",
    "upsample": "upsampling is not supported", "interpolate": "interpolation is not supported",
    "empty": "uninitialised tensors (torch.empty) are not supported",
}


def reg(*targets):
    def deco(fn):
        for t in targets:
            HANDLERS[t] = fn
        return fn
    return deco


def why_unsupported(target: str) -> str:
    low = target.lower()
    for key, why in UNSUPPORTED_WHY.items():
        if key in low:
            return why
    return "it is outside the supported opset (docs/ownops.md lists it)"


# --------------------------------------------------------------------------- helpers

def shape_of(rec) -> tuple:
    got = torch_shape(rec.get("val"), rec["name"])
    if got is None:
        raise Unsupported(f"node {rec['name']}: torch recorded no tensor shape", node=rec["name"])
    return got[0]


def f32(b: Builder, x):
    """Arithmetic operand: bool masks promote to 0/1 floats, as torch does."""
    if isinstance(x, Val) and x.name is not None and x.dtype == "bool":
        return b.op("to_f32", x)
    if isinstance(x, Val) and x.const is not None and x.const.dtype == np.bool_:
        return Val(const=x.const.astype(np.float64))
    return x


def as_bool(b: Builder, x):
    if isinstance(x, Val) and x.name is not None and x.dtype == "f32":
        return b.op("ne", x, 0.0)
    if isinstance(x, Val) and x.const is not None and x.const.dtype != np.bool_:
        return Val(const=x.const != 0)
    return x


def rank(x) -> int:
    if isinstance(x, Val):
        return len(x.shape) if x.name is not None else (x.const.ndim if x.const is not None else 0)
    return 0


def shp(x) -> tuple:
    if isinstance(x, Val) and x.name is not None:
        return x.shape
    if isinstance(x, Val) and x.const is not None:
        return tuple(x.const.shape)
    return ()


def reshape(b: Builder, x, shape):
    shape = list(shape)
    return x if list(shp(x)) == shape else b.op("reshape", x, shape=shape)


def reduce(b: Builder, kind: str, x, dims, keepdim: bool, **attrs):
    x = f32(b, x)
    r = rank(x)
    if r == 0:
        return x
    dims = normalise_dims(dims, r)
    out = b.op(kind, x, dims=dims, **attrs)
    if not keepdim:
        out = reshape(b, out, [s for i, s in enumerate(shp(x)) if i not in dims])
    return out


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


# --------------------------------------------------------------------------- reductions

@reg("aten.sum.dim_IntList")
def _sum(b, r, x, dims=None, keepdim=False, dtype=None):
    return reduce(b, "sum", x, dims, keepdim)


@reg("aten.sum.default")
def _sum_all(b, r, x, dtype=None):
    return reduce(b, "sum", x, None, False)


@reg("aten.mean.dim")
def _mean(b, r, x, dims=None, keepdim=False, dtype=None):
    return reduce(b, "mean", x, dims, keepdim)


@reg("aten.mean.default")
def _mean_all(b, r, x, dtype=None):
    return reduce(b, "mean", x, None, False)


@reg("aten.amax.default", "aten.amin.default")
def _amax(b, r, x, dims=(), keepdim=False):
    return reduce(b, "amax" if "amax" in r["target"] else "amin", x, list(dims) or None, keepdim)


@reg("aten.max.default", "aten.min.default")
def _max_all(b, r, x):
    return reduce(b, "amax" if ".max." in r["target"] else "amin", x, None, False)


@reg("aten.max.dim", "aten.min.dim")
def _max_dim(b, r, x, dim, keepdim=False):
    values = reduce(b, "amax" if ".max." in r["target"] else "amin", x, [dim], keepdim)
    return Val(items=[values, Val(refused=f"node {r['name']}: the indices of max/min along a dim are integers, "
                                         "which are not supported")])


@reg("aten.prod.dim_int")
def _prod(b, r, x, dim, keepdim=False, dtype=None):
    return reduce(b, "prod", x, [dim], keepdim)


@reg("aten.prod.default")
def _prod_all(b, r, x, dtype=None):
    return reduce(b, "prod", x, None, False)


def _correction(correction, unbiased=True):
    return 1.0 if correction is None and unbiased else float(correction or 0.0)


@reg("aten.var.correction")
def _var(b, r, x, dims=None, correction=None, keepdim=False):
    return reduce(b, "var", x, dims, keepdim, correction=_correction(correction))


@reg("aten.var.dim")
def _var_dim(b, r, x, dims=None, unbiased=True, keepdim=False):
    return reduce(b, "var", x, dims, keepdim, correction=1.0 if unbiased else 0.0)


@reg("aten.std.correction")
def _std(b, r, x, dims=None, correction=None, keepdim=False):
    return b.op("sqrt", reduce(b, "var", x, dims, keepdim, correction=_correction(correction)))


@reg("aten.var_mean.correction")
def _var_mean(b, r, x, dims=None, correction=None, keepdim=False):
    return Val(items=[reduce(b, "var", x, dims, keepdim, correction=_correction(correction)),
                      reduce(b, "mean", x, dims, keepdim)])


@reg("aten.linalg_vector_norm.default")
def _vector_norm(b, r, x, ord=2, dim=None, keepdim=False, dtype=None):
    x = f32(b, x)
    p = float(ord)
    if p == 2:
        return b.op("sqrt", reduce(b, "sum", b.op("mul", x, x), dim, keepdim))
    if p == 1:
        return reduce(b, "sum", b.op("abs", x), dim, keepdim)
    if math.isinf(p):
        return reduce(b, "amax" if p > 0 else "amin", b.op("abs", x), dim, keepdim)
    s = reduce(b, "sum", b.op("pow", b.op("abs", x), p), dim, keepdim)
    return b.op("pow", s, 1.0 / p)


@reg("aten.logsumexp.default")
def _logsumexp(b, r, x, dims, keepdim=False):
    x = f32(b, x)
    m = reduce(b, "amax", x, dims, True)
    m = b.op("where", b.op("eq", b.op("abs", m), math.inf), 0.0, m)
    s = b.op("add", b.op("log", reduce(b, "sum", b.op("exp", b.op("sub", x, m)), dims, True)), m)
    return s if keepdim else reshape(b, s, shape_of(r))


@reg("aten._softmax.default")
def _softmax(b, r, x, dim, half_to_float=False):
    x = f32(b, x)
    m = reduce(b, "amax", x, [dim], True)
    e = b.op("exp", b.op("sub", x, m))
    return b.op("div", e, reduce(b, "sum", e, [dim], True))


@reg("aten._log_softmax.default")
def _log_softmax(b, r, x, dim, half_to_float=False):
    x = f32(b, x)
    shifted = b.op("sub", x, reduce(b, "amax", x, [dim], True))
    return b.op("sub", shifted, b.op("log", reduce(b, "sum", b.op("exp", shifted), [dim], True)))


# --------------------------------------------------------------------------- norms

def _normalise(b, x, dims, eps):
    mean = b.op("mean", x, dims=dims)
    d = b.op("sub", x, mean)
    var = b.op("mean", b.op("mul", d, d), dims=dims)
    rstd = b.op("rsqrt", b.op("add", var, float(eps)))
    return b.op("mul", d, rstd), mean, rstd


@reg("aten.native_layer_norm.default")
def _layer_norm(b, r, x, normalized_shape, weight, bias, eps):
    x = f32(b, x)
    n = rank(x)
    dims = list(range(n - len(normalized_shape), n))
    y, mean, rstd = _normalise(b, x, dims, eps)
    if weight is not None:
        y = b.op("mul", y, weight)
    if bias is not None:
        y = b.op("add", y, bias)
    return Val(items=[y, mean, rstd])


@reg("aten.native_group_norm.default")
def _group_norm(b, r, x, weight, bias, N, C, HxW, group, eps):
    x = f32(b, x)
    full = shp(x)
    xg = reshape(b, x, [N, group, (C // group) * HxW])
    y, mean, rstd = _normalise(b, xg, [2], eps)
    y = reshape(b, y, full)
    per_channel = [C] + [1] * (len(full) - 2)
    if weight is not None:
        y = b.op("mul", y, reshape(b, weight, per_channel))
    if bias is not None:
        y = b.op("add", y, reshape(b, bias, per_channel))
    return Val(items=[y, reshape(b, mean, [N, group]), reshape(b, rstd, [N, group])])


def _affine_channels(b, y, x, weight, bias):
    per_channel = [shp(x)[1]] + [1] * (rank(x) - 2)
    if weight is not None:
        y = b.op("mul", y, reshape(b, weight, per_channel))
    if bias is not None:
        y = b.op("add", y, reshape(b, bias, per_channel))
    return y


def _bn_running(b, r, x, weight, bias, mean, var, eps):
    x = f32(b, x)
    per_channel = [shp(x)[1]] + [1] * (rank(x) - 2)
    y = b.op("mul", b.op("sub", x, reshape(b, mean, per_channel)),
             b.op("rsqrt", b.op("add", reshape(b, var, per_channel), float(eps))))
    return Val(items=[_affine_channels(b, y, x, weight, bias),
                      Val(refused=f"node {r['name']}: batch-norm statistics outputs are not supported"),
                      Val(refused=f"node {r['name']}: batch-norm statistics outputs are not supported")])


def _bn_batch(b, r, x, weight, bias, eps):
    x = f32(b, x)
    dims = [0] + list(range(2, rank(x)))
    y, mean, rstd = _normalise(b, x, dims, eps)
    return Val(items=[_affine_channels(b, y, x, weight, bias), mean, rstd])


@reg("aten._native_batch_norm_legit_no_training.default")
def _bn_eval(b, r, x, weight, bias, running_mean, running_var, momentum, eps):
    return _bn_running(b, r, x, weight, bias, running_mean, running_var, eps)


@reg("aten._native_batch_norm_legit.no_stats")
def _bn_no_stats(b, r, x, weight, bias, training, momentum, eps):
    return _bn_batch(b, r, x, weight, bias, eps)


@reg("aten._native_batch_norm_legit.default", "aten.native_batch_norm.default")
def _bn_legit(b, r, x, weight, bias, running_mean, running_var, training, momentum, eps):
    if training:
        return _bn_batch(b, r, x, weight, bias, eps)
    return _bn_running(b, r, x, weight, bias, running_mean, running_var, eps)


# --------------------------------------------------------------------------- matmul, attention

@reg("aten.mm.default", "aten.bmm.default", "aten.matmul.default")
def _mm(b, r, x, y):
    return b.op("matmul", b.tensor(f32(b, x)), b.tensor(f32(b, y)))


@reg("aten.addmm.default", "aten.baddbmm.default")
def _addmm(b, r, bias, x, y, beta=1, alpha=1):
    out = _mm(b, r, x, y)
    if alpha != 1:
        out = b.op("mul", out, float(alpha))
    if beta == 0:
        return out
    bias = f32(b, bias)
    if beta != 1:
        bias = b.op("mul", bias, float(beta))
    return b.op("add", out, bias)


@reg("aten.mv.default")
def _mv(b, r, x, v):
    return reshape(b, _mm(b, r, x, reshape(b, v, [shp(v)[0], 1])), [shp(x)[0]])


@reg("aten.dot.default")
def _dot(b, r, x, y):
    return reshape(b, _mm(b, r, reshape(b, x, [1, shp(x)[0]]), reshape(b, y, [shp(y)[0], 1])), [])


@reg("aten.scaled_dot_product_attention.default")
def _sdpa(b, r, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    if dropout_p:
        raise Unsupported(f"node {r['name']}: attention dropout (p={dropout_p}) is not supported",
                          node=r["name"], op="aten.scaled_dot_product_attention.default")
    operands = [b.tensor(f32(b, q)), b.tensor(f32(b, k)), b.tensor(f32(b, v))]
    if attn_mask is not None:
        operands.append(b.tensor(attn_mask))
    return b.op("attention", *operands, causal=bool(is_causal), scale=None if scale is None else float(scale),
                gqa=bool(enable_gqa))


# --------------------------------------------------------------------------- views, cat

@reg("aten.view.default", "aten._unsafe_view.default", "aten.reshape.default", "aten.unsqueeze.default",
     "aten.squeeze.dim", "aten.squeeze.dims", "aten.squeeze.default", "aten.flatten.using_ints")
def _view(b, r, x, *a, **k):
    return reshape(b, x, shape_of(r))


@reg("aten.permute.default")
def _permute(b, r, x, dims):
    perm = [d % rank(x) for d in dims] if rank(x) else []
    return x if perm == sorted(perm) else b.op("permute", x, perm=perm)


@reg("aten.t.default")
def _t(b, r, x):
    return b.op("permute", x, perm=[1, 0]) if rank(x) == 2 else x


@reg("aten.transpose.int")
def _transpose(b, r, x, d0, d1):
    n = rank(x)
    perm = list(range(n))
    perm[d0 % n], perm[d1 % n] = perm[d1 % n], perm[d0 % n]
    return x if perm == sorted(perm) else b.op("permute", x, perm=perm)


@reg("aten.expand.default")
def _expand(b, r, x, size, implicit=False):
    out = shape_of(r)
    return x if tuple(shp(x)) == tuple(out) else b.op("expand", x, shape=list(out))


def _slice(b, x, dim, start, end, step=1):
    n = rank(x)
    d = dim % n
    size = shp(x)[d]
    start = 0 if start is None else (start + size if start < 0 else start)
    end = size if end is None else (end + size if end < 0 else end)
    start, end = max(0, min(start, size)), max(0, min(end, size))
    if start == 0 and end == size and step == 1:
        return x
    if end <= start:
        raise Unsupported(f"node {b.origin}: the slice is empty (zero-size tensors are not supported)",
                          node=b.origin)
    return b.op("slice", x, dim=d, start=int(start), stop=int(end), step=int(step))


@reg("aten.slice.Tensor")
def _slice_t(b, r, x, dim=0, start=None, end=None, step=1):
    return _slice(b, x, dim, start, end, step)


@reg("aten.select.int")
def _select(b, r, x, dim, index):
    size = shp(x)[dim % rank(x)]
    index = index + size if index < 0 else index
    return reshape(b, _slice(b, x, dim, index, index + 1), shape_of(r))


@reg("aten.split_with_sizes.default", "aten.split.Tensor")
def _split(b, r, x, sizes, dim=0):
    size = shp(x)[dim % rank(x)]
    if isinstance(sizes, int):
        sizes = [min(sizes, size - s) for s in range(0, size, sizes)]
    items, start = [], 0
    for s in sizes:
        items.append(_slice(b, x, dim, start, start + s))
        start += s
    return Val(items=items)


@reg("aten.unbind.int")
def _unbind(b, r, x, dim=0):
    d = dim % rank(x)
    keep = [s for i, s in enumerate(shp(x)) if i != d]
    return Val(items=[reshape(b, _slice(b, x, d, i, i + 1), keep) for i in range(shp(x)[d])])


@reg("aten.cat.default")
def _cat(b, r, tensors, dim=0):
    parts = [b.tensor(f32(b, t)) for t in tensors]
    if len(parts) == 1:
        return parts[0]
    return b.op("cat", *parts, dim=dim % rank(parts[0]))


@reg("aten.stack.default")
def _stack(b, r, tensors, dim=0):
    out = shape_of(r)
    d = dim % len(out)
    parts = [reshape(b, b.tensor(f32(b, t)), out[:d] + (1,) + out[d + 1:]) for t in tensors]
    return parts[0] if len(parts) == 1 else b.op("cat", *parts, dim=d)


@reg("aten.repeat.default")
def _repeat(b, r, x, repeats):
    x = f32(b, x)
    shape = (1,) * (len(repeats) - rank(x)) + tuple(shp(x))
    inter = [v for s in shape for v in (1, s)]
    big = [v for rep, s in zip(repeats, shape) for v in (rep, s)]
    y = reshape(b, x, inter)
    y = b.op("expand", y, shape=big) if list(inter) != list(big) else y
    return reshape(b, y, shape_of(r))


@reg("aten.native_dropout.default")
def _dropout(b, r, x, p, train):
    if train:
        raise Unsupported(f"node {r['name']}: dropout in training mode is random", node=r["name"])
    return Val(items=[x, Val(const=np.ones(shp(x), dtype=np.bool_))])


# --------------------------------------------------------------------------- the walk

def translate(records: dict, weights: dict) -> tuple:
    """(Graph, {param name: float32 array}); raises :class:`Unsupported` with a reason."""
    b = Builder()
    env: dict[str, Val] = {}
    inputs: list[Tensor] = []
    taken: set[str] = set()
    outputs: list[str] = []
    user_index = 0
    kinds = records.get("output_kinds", [])
    if any(k != "USER_OUTPUT" for k in kinds):
        raise Unsupported("the model changes its own state in forward (a buffer or input is mutated, e.g. "
                          "batch norm in training mode); only pure functions of the inputs can be imported",
                          kind="unsupported")
    for rec in records["nodes"]:
        op, name = rec["op"], rec["name"]
        b.origin = name
        if op == "placeholder":
            env[name] = _placeholder(b, rec, weights, inputs, taken, user_index)
            user_index += rec.get("kind") == "USER_INPUT"
        elif op == "call_function":
            _symbolic(rec)
            target = rec["target"]
            handler = HANDLERS.get(target)
            if handler is None and target in ("<built-in function getitem>", "getitem"):
                handler = _getitem
            if handler is None:
                raise Unsupported(f"node {name} calls {target}: {why_unsupported(target)}", node=name, op=target)
            args = _resolve(rec["args"], env)
            kwargs = {k: _resolve(v, env) for k, v in rec["kwargs"].items()}
            out = handler(b, rec, *args, **kwargs)
            env[name] = _check(b, rec, out)
        elif op == "output":
            flat = _flat_refs(rec["args"][0] if rec["args"] else [])
            for i, ref in enumerate(flat):
                outputs.append(_output(b, env.get(ref) if isinstance(ref, str) else None, i, outputs))
        else:
            raise Unsupported(f"node {name}: FX {op} nodes are not supported", node=name, op=op)
    if not outputs:
        raise Unsupported("the model returns no tensors", kind="format")
    return finish(b, inputs, outputs)


def _placeholder(b, rec, weights, inputs, taken, user_index) -> Val:
    val = rec.get("val")
    if isinstance(val, dict) and "scalar" in val:   # an int/float argument: export bakes it in
        v = val["scalar"]
        return Val(scalar=float(v["float"]) if isinstance(v, dict) and "float" in v else v)
    shape, dtype = torch_shape(val, rec["name"]) or ((), "none")
    kind = rec.get("kind")
    if kind == "USER_INPUT":
        if dtype != "torch.float32":
            raise Unsupported(f"input {rec['name']} is {dtype}; only float32 tensors are supported",
                              node=rec["name"], kind="dtype")
        name = c_name(rec["name"], taken)
        inputs.append(Tensor(name, shape, "input", f"get_inputs()[{user_index}]"))
        b.specs[name] = (shape, "f32")
        return Val(name=name, shape=shape, dtype="f32")
    if kind in ("PARAMETER", "BUFFER", "CONSTANT_TENSOR"):
        arr = weights.get(rec["name"])
        if dtype != "torch.float32" or arr is None:
            return Val(refused=f"{kind.lower()} {rec.get('source') or rec['name']} is {dtype}; only float32 "
                               "weights are supported")
        name = c_name(rec["name"], taken)
        b.params[name] = arr
        b.param_roles[name] = ("param", str(rec.get("source") or rec["name"]))
        b.specs[name] = (shape, "f32")
        return Val(name=name, shape=shape, dtype="f32")
    raise Unsupported(f"placeholder {rec['name']} of kind {kind} is not supported", node=rec["name"])


def _output(b, val, i, taken_outputs) -> str:
    if val is None or val.refused:
        raise Unsupported(val.refused if val is not None and val.refused else f"output {i} is not a tensor",
                          kind="unsupported" if val is not None else "format")
    if val.name is None:
        val = b.tensor(val)
    if val.dtype != "f32":
        raise Unsupported(f"output {i} is a {val.dtype} tensor; outputs must be float32", kind="dtype")
    made_by_node = any(n.name == val.name for n in b.nodes)
    if val.name in taken_outputs or not made_by_node:   # each output gets a node of its own
        val = b.op("identity", val)
    return val.name


def _symbolic(rec) -> None:
    """A size torch could only name symbolically (it depends on the data): refused first,
    whatever the op, because no static kernel can be written for it."""
    def walk(v):
        if isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, dict) and isinstance(v.get("shape"), list):
            for d in v["shape"]:
                if not isinstance(d, int):
                    raise Unsupported(f"node {rec['name']} ({rec.get('target')}) has a data-dependent size "
                                      f"{d.get('sym', d) if isinstance(d, dict) else d}: shapes must be static",
                                      node=rec["name"], op=str(rec.get("target")), kind="dynamic")
    walk(rec.get("val"))


def _getitem(b, r, tup, index):
    if not isinstance(tup, Val) or tup.items is None:
        raise Unsupported(f"node {r['name']}: getitem on a non-tuple", node=r["name"])
    return tup.items[index]


def _resolve(a, env):
    if isinstance(a, dict):
        if "node" in a:
            v = env.get(a["node"])
            if v is None:
                raise Unsupported(f"node {a['node']} is used but produced no value", node=str(a["node"]))
            if v.refused:
                raise Unsupported(v.refused)
            return v
        if "float" in a:
            return float(a["float"])
        if "sym" in a:
            raise Unsupported(f"a symbolic value ({a['sym']}) appears: shapes must be static", kind="dynamic")
        if "dtype" in a or "enum" in a:
            return a
        if "other" in a:
            return a
        return a
    if isinstance(a, list):
        return [_resolve(x, env) for x in a]
    return a


def _flat_refs(a) -> list:
    if isinstance(a, dict) and "node" in a:
        return [a["node"]]
    if isinstance(a, list):
        return [x for item in a for x in _flat_refs(item)]
    return [None]


def _check(b, rec, out):
    """The handler's result must have the shape and dtype torch recorded. Secondary outputs
    of a tuple (a norm's saved statistics) are reshaped to torch's layout of them."""
    val = rec.get("val")
    if out is None or not isinstance(out, Val):
        return out
    if out.items is not None:
        if isinstance(val, list):
            items = list(out.items)
            for i, (item, v) in enumerate(zip(items, val)):
                if not isinstance(item, Val) or item.refused or item.items is not None:
                    continue
                got = torch_shape(v, rec["name"])
                if i > 0 and got is not None and tuple(shp(item)) != got[0] and \
                        math.prod(shp(item)) == math.prod(got[0]):
                    items[i] = reshape(b, item, got[0])
                else:
                    items[i] = _check(b, {"name": rec["name"], "val": v, "target": rec.get("target", "")}, item)
            out = Val(items=items)
        return out
    got = torch_shape(val, rec["name"])
    if got is None or out.refused:
        return out
    shape, dtype = got
    mine = shp(out)
    if tuple(mine) != tuple(shape):
        raise Unsupported(f"node {rec['name']}: translated to shape {list(mine)}, torch says {list(shape)}",
                          node=rec["name"], op=rec.get("target", ""), kind="internal")
    if out.name is not None and dtype not in TORCH_DTYPES:
        raise Unsupported(f"node {rec['name']} makes a {dtype} tensor; only float32 (and bool masks) are supported",
                          node=rec["name"], op=rec.get("target", ""), kind="dtype")
    if out.name is not None and TORCH_DTYPES[dtype] != out.dtype:
        raise Unsupported(f"node {rec['name']}: translated to {out.dtype}, torch says {dtype}",
                          node=rec["name"], kind="internal")
    return out
