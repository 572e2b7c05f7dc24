"""Handlers for reductions, softmax, norms, matmul, attention, views and cat."""
from __future__ import annotations

import math

import numpy as np

from kernels.graph.aten_base import f32, rank, reduce, reg, reshape, shape_of, shp
from kernels.graph.translate import Unsupported, Val

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


@reg("aten.flip.default")
def _flip(b, r, x, dims):
    n = rank(x)
    dims = sorted({d % n for d in dims if shp(x)[d % n] > 1}) if n else []
    return b.op("flip", x, dims=dims) if dims else x


@reg("aten.cumsum.default", "aten.cumprod.default")
def _scan(b, r, x, dim, dtype=None):
    x = f32(b, x)
    return b.op("cumsum" if "cumsum" in r["target"] else "cumprod", x, dim=dim % rank(x))


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
    if all(isinstance(t, Val) and t.const is not None for t in tensors):   # folded (positions, say)
        return Val(const=np.concatenate([t.const for t in tensors], axis=dim))
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


EMBEDDING_RUNS = 64   # constant lookups that fall into more runs of rows than this are refused


@reg("aten.embedding.default")
def _embedding(b, r, weight, indices, *rest, **kwargs):
    """A lookup at positions fixed when the model was captured (``wpe(torch.arange(T))``, the
    positions of a GPT-2-style model): rows of the weight, as slices. An arithmetic progression
    is one slice; other index sets are runs of consecutive rows joined along the rows. Indices
    that depend on the inputs (token ids) would be a gather, which the opset does not have."""
    if not (isinstance(indices, Val) and indices.const is not None):
        why = indices.refused if isinstance(indices, Val) and indices.refused else \
            "its indices are computed from the inputs (a gather)"
        raise Unsupported(f"node {r['name']}: an embedding lookup is supported at constant positions "
                          f"(torch.arange) only; {why}", node=r["name"])
    if isinstance(weight, Val) and weight.refused:
        raise Unsupported(weight.refused, node=r["name"])
    idx = np.asarray(indices.const).astype(np.int64).ravel()
    rows = shp(weight)[0]
    if idx.size == 0 or idx.min() < 0 or idx.max() >= rows:
        raise Unsupported(f"node {r['name']}: embedding indices {idx.min() if idx.size else '(none)'}.."
                          f"{idx.max() if idx.size else ''} fall outside the table's {rows} rows", node=r["name"])
    step = int(idx[1] - idx[0]) if idx.size > 1 else 1
    if step > 0 and np.array_equal(idx, idx[0] + step * np.arange(idx.size)):
        return reshape(b, _slice(b, weight, 0, int(idx[0]), int(idx[-1]) + 1, step), shape_of(r))
    cuts = np.flatnonzero(np.diff(idx) != 1) + 1
    starts = np.concatenate([[0], cuts])
    ends = np.concatenate([cuts, [idx.size]])
    if starts.size > EMBEDDING_RUNS:
        raise Unsupported(f"node {r['name']}: a constant embedding lookup in {starts.size} runs of rows "
                          f"(at most {EMBEDDING_RUNS})", node=r["name"])
    parts = [_slice(b, weight, 0, int(idx[s]), int(idx[e - 1]) + 1) for s, e in zip(starts, ends)]
    table = parts[0] if len(parts) == 1 else b.op("cat", *parts, dim=0)
    return reshape(b, table, shape_of(r))


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
