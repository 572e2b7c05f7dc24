"""Indexing at positions fixed when the model was captured, and resampling.

Torch lowers reflect and replicate padding, ``torch.roll`` and ``index_select`` with constant
indices to ``aten.index.Tensor`` / ``index_select`` over index tensors built from ``arange``
— folded to constants at translation. Such a gather along one dim is rows of its input: a run
of consecutive positions is a slice (a descending run a flipped slice), a position repeated
``r`` times is an expand, and the runs are joined along the dim. Indices that depend on the
inputs would be a true gather, which the opset does not have: refused.

Nearest upsampling is the same gather (each source position repeated); bilinear and linear
upsampling are linear maps along each dim, so they are products with constant interpolation
matrices (``[out, in]``, two taps per row), computed in float64 at import like torch's.
"""
from __future__ import annotations

import math

import numpy as np

from kernels.graph.aten_base import f32, rank, reg, reshape, shape_of, shp
from kernels.graph.translate import Unsupported, Val

GATHER_RUNS = 64   # constant gathers that fall into more runs than this are refused


def runs(idx: np.ndarray) -> list[tuple[int, int, int, int]]:
    """``idx`` as maximal runs ``(first, step, count, repeat)``: ``count`` positions ``step``
    apart (±1, or 0 for one position), each repeated ``repeat`` times."""
    out = []
    i = 0
    while i < idx.size:
        rep = 1
        while i + rep < idx.size and idx[i + rep] == idx[i]:
            rep += 1
        count, step = 1, 0
        j = i + rep
        if j + rep <= idx.size and abs(int(idx[j]) - int(idx[i])) == 1 and np.all(idx[j:j + rep] == idx[j]):
            step = int(idx[j]) - int(idx[i])
            while (j + rep <= idx.size and np.all(idx[j:j + rep] == idx[j])
                   and int(idx[j]) - int(idx[j - rep]) == step):
                count += 1
                j += rep
        out.append((int(idx[i]), step, count, rep))
        i += count * rep
    return out


def gather(b, x, dim: int, idx, node: str):
    """``x`` indexed along ``dim`` by the constant positions ``idx`` (1-d, negatives wrap)."""
    size = shp(x)[dim]
    idx = np.asarray(idx).astype(np.int64).ravel()
    if idx.size == 0 or idx.min() < -size or idx.max() >= size:
        raise Unsupported(f"node {node}: indices outside the {size} positions of dim {dim}", node=node)
    idx = np.where(idx < 0, idx + size, idx)
    if np.array_equal(idx, np.arange(size)):
        return x
    parts = runs(idx)
    if len(parts) > GATHER_RUNS:
        raise Unsupported(f"node {node}: a gather at constant positions in {len(parts)} runs (at most {GATHER_RUNS})",
                          node=node)
    pieces = []
    for first, step, count, rep in parts:
        lo, hi = (first, first + count) if step >= 0 else (first - count + 1, first + 1)
        piece = x if (lo, hi) == (0, size) else b.op("slice", x, dim=dim, start=lo, stop=hi, step=1)
        if step < 0 and count > 1:
            piece = b.op("flip", piece, dims=[dim])
        if rep > 1:
            shape = list(shp(piece))
            piece = reshape(b, piece, shape[:dim + 1] + [1] + shape[dim + 1:])
            piece = b.op("expand", piece, shape=shape[:dim + 1] + [rep] + shape[dim + 1:])
            piece = reshape(b, piece, shape[:dim] + [shape[dim] * rep] + shape[dim + 1:])
        pieces.append(piece)
    return pieces[0] if len(pieces) == 1 else b.op("cat", *pieces, dim=dim)


def _constant_index(v, node: str):
    if isinstance(v, Val) and v.const is not None:
        return np.asarray(v.const)
    why = v.refused if isinstance(v, Val) and v.refused else "its positions are computed from the inputs"
    raise Unsupported(f"node {node}: indexing by a tensor is supported at positions fixed in the model only; {why}",
                      node=node)


@reg("aten.index.Tensor", "aten._unsafe_index.Tensor")
def _index(b, r, x, indices):
    """``x[..., idx, ...]`` with constant index tensors: one, or several on consecutive dims
    that each vary along their own axis of the broadcast (``x[:, i[:, None], j]``, as torch's
    own resampling decompositions index), which is one gather per dim."""
    node = r["name"]
    given = [(d, _constant_index(v, node)) for d, v in enumerate(indices) if v is not None]
    if any(idx.dtype == np.bool_ for _, idx in given):
        raise Unsupported(f"node {node}: indexing by a mask selects a data-dependent count", node=node)
    dims = [d for d, _ in given]
    full = np.broadcast_shapes(*(idx.shape for _, idx in given))
    y = f32(b, x)
    for k, (dim, idx) in enumerate(given):
        shape = (1,) * (len(full) - idx.ndim) + idx.shape
        axes = [a for a, n in enumerate(shape) if n > 1]
        if len(given) > 1 and (dims != list(range(dims[0], dims[0] + len(dims))) or len(full) != len(given)
                               or any(a != k for a in axes)):
            raise Unsupported(f"node {node}: indexing by {len(given)} tensors at once is supported where each "
                              f"selects along its own dim (an outer product), not here", node=node, op=r["target"])
        y = gather(b, y, dim, idx, node)
    return reshape(b, y, shape_of(r))


@reg("aten.index_select.default")
def _index_select(b, r, x, dim, index):
    node = r["name"]
    y = gather(b, f32(b, x), dim % rank(x), _constant_index(index, node), node)
    return reshape(b, y, shape_of(r))


# --------------------------------------------------------------------------- resampling

def _scales(r, output_size, scale_factors, n: int) -> tuple[list[int], list[float | None]]:
    """The output sizes torch recorded, and the factors it was given (None: sizes were)."""
    outs = list(shape_of(r)[-n:])
    if output_size is None and scale_factors:
        return outs, [float(s) for s in scale_factors]
    return outs, [None] * n


@reg("aten.upsample_nearest1d.vec", "aten.upsample_nearest2d.vec", "aten.upsample_nearest3d.vec")
def _nearest(b, r, x, output_size, scale_factors):
    """torch's ``nearest``: source ``min(floor(dst · scale), in − 1)`` in float32, ``scale``
    the input over the output size (or one over the given factor)."""
    node = r["name"]
    n = int(r["target"].split("upsample_nearest")[1][0])
    x = f32(b, x)
    outs, factors = _scales(r, output_size, scale_factors, n)
    for i, (size, out, factor) in enumerate(zip(shp(x)[-n:], outs, factors)):
        scale = np.float32(1.0 / factor) if factor else np.float32(size) / np.float32(out)
        src = np.minimum(np.floor(np.arange(out, dtype=np.float32) * scale).astype(np.int64), size - 1)
        x = gather(b, x, rank(x) - n + i, src, node)
    return x


def interpolation(size: int, out: int, align_corners: bool, factor: float | None) -> np.ndarray:
    """The ``[out, size]`` matrix of linear interpolation along one dim, as torch computes it."""
    if align_corners:
        scale = (size - 1) / (out - 1) if out > 1 else 0.0
        src = np.arange(out, dtype=np.float64) * scale
    else:
        scale = 1.0 / factor if factor else size / out
        src = np.maximum((np.arange(out, dtype=np.float64) + 0.5) * scale - 0.5, 0.0)
    lo = np.minimum(np.floor(src).astype(np.int64), size - 1)
    hi = np.minimum(lo + 1, size - 1)
    frac = src - lo
    m = np.zeros((out, size))
    np.add.at(m, (np.arange(out), lo), 1.0 - frac)
    np.add.at(m, (np.arange(out), hi), frac)
    return m


@reg("aten.upsample_bilinear2d.vec", "aten.upsample_linear1d.vec", "aten.upsample_trilinear3d.vec")
def _linear(b, r, x, output_size, align_corners, scale_factors):
    """(Bi/tri)linear upsampling: along each dim, a product with its interpolation matrix."""
    n = {"linear1d": 1, "bilinear2d": 2, "trilinear3d": 3}[r["target"].split("upsample_")[1].split(".")[0]]
    x = f32(b, x)
    outs, factors = _scales(r, output_size, scale_factors, n)
    for i, (size, out, factor) in enumerate(zip(list(shp(x)[-n:]), outs, factors)):
        dim = rank(x) - n + i
        m = b.const_param(interpolation(size, out, bool(align_corners), factor).T)   # [size, out]
        last = rank(x) - 1
        perm = list(range(rank(x)))
        perm[dim], perm[last] = perm[last], perm[dim]
        moved = b.op("permute", x, perm=perm) if dim != last else x
        y = b.op("matmul", moved, m)
        x = b.op("permute", y, perm=perm) if dim != last else y
    if math.prod(shp(x)) != math.prod(shape_of(r)):
        raise Unsupported(f"node {r['name']}: upsampled to {list(shp(x))}, torch says {list(shape_of(r))}",
                          node=r["name"])
    return reshape(b, x, shape_of(r))
