"""Convolutions, constant padding and pooling, in the opset's own terms.

A convolution is a matrix product over sliding windows. Each spatial dim of the (padded)
input becomes two through the ``window`` view — which window, and which element of it —
so ``x[n, c, h, w]`` reads as ``u[n, c, oh, i, ow, j] = x[n, c, s·oh + d·i, s·ow + d·j]``
with no copy; the weight ``[groups, out/groups, c·kh·kw]`` multiplies the windows arranged
as ``[n, groups, c·kh·kw, oh·ow]``, so the product lands in the output's own layout
``[n, out, oh, ow]`` and a bias fuses into its stores. The code generator materialises the
windows where the GEMM cannot read them through one stride per dim (the im2col buffer, one
pointwise group); a 1×1 convolution needs none. A transposed convolution is one direct
convolution per output phase (:func:`_transposed`), interleaved.

Pooling reduces the same windows (``amax``; ``sum`` over the window dims divided by a count).
Padding is a concatenation with a constant — ``-inf`` for max pooling, as torch pads it — and
``count_include_pad=False``'s per-window counts are the same pooling of ones, folded to a
constant at import.
"""
from __future__ import annotations

import math

import numpy as np

from kernels.graph.aten_base import f32, rank, reg, reshape, shp
from kernels.graph.opset import window_count
from kernels.graph.translate import Unsupported, Val


def per_dim(v, n: int, what: str, node: str) -> list[int]:
    """A kernel/stride/padding/dilation argument as one int per spatial dim."""
    vals = [int(x) for x in v] if isinstance(v, (list, tuple)) else [int(v)]
    if len(vals) == 1:
        vals = vals * n
    if len(vals) != n:
        raise Unsupported(f"node {node}: {what} {list(vals)} does not give one value per spatial dim ({n})",
                          node=node)
    return vals


def pad(b, x, dim: int, lo: int, hi: int, value: float = 0.0):
    """``x`` with ``lo`` and ``hi`` elements of ``value`` added along ``dim`` (negative: cropped)."""
    n = shp(x)[dim]
    if lo < 0 or hi < 0:
        start, stop = max(0, -lo), n - max(0, -hi)
        if stop <= start:
            raise Unsupported(f"node {b.origin}: padding crops the tensor to nothing", node=b.origin)
        idx = [slice(None)] * rank(x)
        idx[dim] = slice(start, stop)
        x = Val(const=x.const[tuple(idx)]) if x.const is not None else b.op(
            "slice", x, dim=dim, start=start, stop=stop, step=1)
        lo, hi = max(0, lo), max(0, hi)
    if not lo and not hi:
        return x
    if x.const is not None:
        widths = [(0, 0)] * rank(x)
        widths[dim] = (lo, hi)
        return Val(const=np.pad(x.const, widths, constant_values=value))
    parts = []
    for width in (lo, None, hi):
        if width is None:
            parts.append(x)
        elif width:
            shape = list(shp(x))
            shape[dim] = width
            fill = b.const_param(np.full((1,) * rank(x), value))
            parts.append(b.op("expand", fill, shape=shape))
    return b.op("cat", *parts, dim=dim)


def windows(b, x, first: int, kernel, stride, dilation):
    """Spatial dims ``first..`` of ``x`` split into (window, element) pairs: a dim of n becomes
    ``[count, k]``, in place, so the result is ``[.., o1, k1, o2, k2, ..]``."""
    for i, (k, s, d) in enumerate(zip(kernel, stride, dilation)):
        dim = first + 2 * i
        if d * (k - 1) >= shp(x)[dim]:
            raise Unsupported(f"node {b.origin}: a window of {k} (dilation {d}) is wider than the padded "
                              f"input ({shp(x)[dim]})", node=b.origin)
        x = b.op("window", x, dim=dim, size=k, step=s, dilation=d)
    return x


# --------------------------------------------------------------------------- convolution

MAX_PHASES = 32     # a transposed convolution with more output phases (the strides' product) is spread


@reg("aten.convolution.default")
def _convolution(b, r, x, w, bias, stride, padding, dilation, transposed, output_padding, groups):
    node = r["name"]
    x, w = b.tensor(f32(b, x)), b.tensor(f32(b, w))
    bias = None if bias is None else b.tensor(f32(b, bias))
    n = rank(x) - 2
    if n < 1 or rank(w) != n + 2:
        raise Unsupported(f"node {node}: a convolution of a rank-{rank(x)} input by a rank-{rank(w)} weight",
                          node=node, op=r["target"])
    stride, dilation = per_dim(stride, n, "stride", node), per_dim(dilation, n, "dilation", node)
    padding = per_dim(padding, n, "padding", node)
    channels, weight_ch = shp(x)[1], shp(w)[0 if transposed else 1]
    if channels != weight_ch * (1 if transposed else groups) or shp(w)[0] % groups:
        raise Unsupported(f"node {node}: {channels} input channels and {groups} groups do not fit a "
                          f"{'transposed ' if transposed else ''}weight of {list(shp(w))}", node=node, op=r["target"])
    if transposed:
        output_padding = per_dim(output_padding, n, "output padding", node)
        if math.prod(stride) <= MAX_PHASES:
            return _transposed(b, x, w, bias, stride, padding, dilation, output_padding, groups)
        x, w, padding = _spread_form(b, x, w, stride, padding, dilation, output_padding, groups)
        stride = [1] * n
    return direct(b, x, w, bias, stride, padding, dilation, groups)


def direct(b, x, w, bias, stride, padding, dilation, groups):
    """The convolution of ``x [n, c, …]`` by ``w [out, c/groups, k…]`` (cross-correlation, as torch)."""
    nsp = rank(x) - 2
    kernel = list(shp(w)[2:])
    batch = shp(x)[0]
    out_ch, group_ch = shp(w)[:2]
    for i, p in enumerate(padding):
        x = pad(b, x, 2 + i, p, p)
    depth = group_ch * math.prod(kernel)
    if all(k == 1 for k in kernel) and all(s == 1 for s in stride):     # 1×1: the input is the operand
        outs = list(shp(x)[2:])
        a = reshape(b, x, [batch, groups, depth, math.prod(outs)])
    else:
        u = windows(b, x, 2, kernel, stride, dilation)                   # [n, c, o1, k1, o2, k2, ..]
        outs = [shp(u)[2 + 2 * i] for i in range(nsp)]
        u = b.op("permute", u, perm=[0, 1] + [3 + 2 * i for i in range(nsp)] + [2 + 2 * i for i in range(nsp)])
        a = reshape(b, u, [batch, groups, depth, math.prod(outs)])      # [n, g, c·k.., o..]
    wm = reshape(b, w, [groups, out_ch // groups, depth])
    y = b.op("matmul", wm, a)                                            # [n, g, out/g, o..]: NC.. already
    if bias is not None:                                                 # added at the product's shape: its epilogue
        y = b.op("add", y, reshape(b, bias, [groups, out_ch // groups, 1]))
    return reshape(b, y, [batch, out_ch] + outs)


def _transposed(b, x, w, bias, stride, padding, dilation, output_padding, groups):
    """A transposed convolution, one output phase at a time (the sub-pixel form).

    Along a dim, ``y[o] = Σ x[i]·w[k]`` over ``i·s + k·d − p = o``. The outputs ``o = s·q + ρ``
    of one phase ``ρ`` take only the taps ``k`` with ``ρ + p − k·d`` a multiple of ``s``, every
    ``t = s / gcd(s, d)``-th tap, and read ``x[q + (ρ + p − k·d) / s]``: a direct convolution of
    ``x`` (stride 1, dilation ``d / gcd(s, d)``, the taps flipped) — so no product meets a zero
    spread between the input's elements. The phases are interleaved back along each dim."""
    nsp = rank(x) - 2
    kernel, lengths = list(shp(w)[2:]), list(shp(x)[2:])
    in_ch, out_g = shp(w)[:2]
    out_ch = out_g * groups
    outs = [(n - 1) * s - 2 * p + d * (k - 1) + op + 1
            for n, s, p, d, k, op in zip(lengths, stride, padding, dilation, kernel, output_padding)]
    if min(outs) < 1:
        raise Unsupported(f"node {b.origin}: the transposed convolution's output would be {outs}", node=b.origin)
    wd = swapped(b, w, groups)                                           # [out, in/groups, k…], unflipped
    batch = shp(x)[0]

    def phase(dim: int, rho: int):
        """(taps, dilation, first input index, outputs) of phase ``rho`` along spatial dim ``dim``."""
        s, p, d = stride[dim], padding[dim], dilation[dim]
        taps = [k for k in range(kernel[dim]) if (rho + p - k * d) % s == 0]
        count = len(range(rho, outs[dim], s))
        if not taps:
            return taps, 1, 0, count
        return taps, d // math.gcd(s, d), (rho + p - taps[-1] * d) // s, count

    def one(rhos) -> object:
        """Phase ``rhos`` (one per dim) as ``[n, out, q…]``, padded with zeros to the most outputs."""
        most = [len(range(0, o, s)) for o, s in zip(outs, stride)]
        got = [phase(i, r) for i, r in enumerate(rhos)]
        if any(not taps or count == 0 or first > lengths[i] - 1 or first + count - 1 + (len(taps) - 1) * e < 0
               for i, (taps, e, first, count) in enumerate(got)):
            return b.op("expand", b.const_param(np.zeros((1,) * (nsp + 2))), shape=[batch, out_ch] + most)
        xs, ws = x, wd
        for i, (taps, e, first, count) in enumerate(got):
            last = first + count - 1 + (len(taps) - 1) * e
            xs = pad(b, xs, 2 + i, -first, last - (lengths[i] - 1))
            step = taps[1] - taps[0] if len(taps) > 1 else 1
            ws = b.op("slice", ws, dim=2 + i, start=taps[0], stop=taps[-1] + 1, step=step)
        ws = b.op("flip", ws, dims=[2 + i for i in range(nsp)])
        y = direct(b, xs, ws, None, [1] * nsp, [0] * nsp, [e for _, e, _, _ in got], groups)
        for i, (_, _, _, count) in enumerate(got):
            y = pad(b, y, 2 + i, 0, most[i] - count)
        return y

    def interleave(dim: int, rhos: tuple):
        """Dims ``dim…`` interleaved from their phases (dims before ``dim`` fixed at ``rhos``)."""
        if dim == nsp:
            return one(rhos)
        parts = [interleave(dim + 1, rhos + (r,)) for r in range(stride[dim])]
        if len(parts) == 1:
            y = parts[0]
        else:
            at = 2 + dim
            shape = list(shp(parts[0]))
            y = b.op("cat", *(reshape(b, t, shape[:at + 1] + [1] + shape[at + 1:]) for t in parts), dim=at + 1)
            y = reshape(b, y, shape[:at] + [shape[at] * stride[dim]] + shape[at + 1:])
        return y if shp(y)[2 + dim] == outs[dim] else b.op("slice", y, dim=2 + dim, start=0, stop=outs[dim], step=1)

    y = interleave(0, ())
    if bias is not None:
        y = b.op("add", y, reshape(b, bias, [out_ch] + [1] * nsp))
    return y


def swapped(b, w, groups: int):
    """A transposed convolution's weight ``[in, out/groups, k…]`` as a direct one's
    ``[out, in/groups, k…]``: the channel axes swapped within each group (taps unflipped)."""
    in_ch, out_g = shp(w)[:2]
    kernel = list(shp(w)[2:])
    w = b.op("permute", reshape(b, w, [groups, in_ch // groups, out_g] + kernel),
             perm=[0, 2, 1] + [3 + i for i in range(len(kernel))])
    return reshape(b, w, [groups * out_g, in_ch // groups] + kernel)


def _spread_form(b, x, w, stride, padding, dilation, output_padding, groups):
    """The textbook form of a transposed convolution, for strides with more phases than
    MAX_PHASES (one direct convolution each would make the program that much longer): the
    input spread ``stride`` apart with zeros between, the kernel flipped with its channel
    axes swapped per group, padding ``dilation·(k−1) − padding`` (+ output padding); the
    direct convolution of that (stride 1) is the result, at the cost of the zeros' products."""
    n = len(stride)
    kernel = list(shp(w)[2:])
    for i, s in enumerate(stride):
        if s > 1:
            shape = list(shp(x))
            at = 2 + i
            y = pad(b, reshape(b, x, shape[:at + 1] + [1] + shape[at + 1:]), at + 1, 0, s - 1)
            y = reshape(b, y, shape[:at] + [shape[at] * s] + shape[at + 1:])
            x = b.op("slice", y, dim=at, start=0, stop=(shape[at] - 1) * s + 1, step=1)
    w = b.op("flip", swapped(b, w, groups), dims=[2 + i for i in range(n)])
    lo = [d * (k - 1) - p for d, k, p in zip(dilation, kernel, padding)]
    for i in range(n):
        x = pad(b, x, 2 + i, lo[i], lo[i] + output_padding[i])
    return x, w, [0] * n


@reg("aten.constant_pad_nd.default")
def _constant_pad(b, r, x, pad_widths, value=0.0):
    """torch's ``F.pad`` in constant mode: pairs from the last dim backwards."""
    x = f32(b, x)
    if len(pad_widths) % 2 or len(pad_widths) // 2 > rank(x):
        raise Unsupported(f"node {r['name']}: padding {list(pad_widths)} does not fit a rank-{rank(x)} tensor",
                          node=r["name"], op=r["target"])
    for j in range(len(pad_widths) // 2):
        x = pad(b, x, rank(x) - 1 - j, int(pad_widths[2 * j]), int(pad_widths[2 * j + 1]), float(value))
    return x


# --------------------------------------------------------------------------- pooling

def pool(b, r, x, kernel, stride, padding, dilation, ceil_mode, kind, n: int, count_include_pad=True,
         divisor=None):
    """Max or average pooling over the last ``n`` dims of ``x``, any windows torch allows."""
    node = r["name"]
    x = f32(b, x)
    kernel = per_dim(kernel, n, "kernel", node)
    stride = per_dim(stride or kernel, n, "stride", node)
    padding, dilation = per_dim(padding, n, "padding", node), per_dim(dilation, n, "dilation", node)
    first = rank(x) - n
    sizes = shp(x)[first:]
    extra = []
    for size, k, s, p, d in zip(sizes, kernel, stride, padding, dilation):
        if 2 * p > k:
            raise Unsupported(f"node {node}: padding {p} is more than half the window {k}", node=node,
                              op=r["target"])
        count = window_count(size + 2 * p, k, s, d)
        if ceil_mode:
            more = -(-(size + 2 * p - d * (k - 1) - 1) // s) + 1
            if (more - 1) * s >= size + p:     # torch drops a last window that starts in the padding
                more -= 1
            count = max(count, more)
        extra.append((count - 1) * s + d * (k - 1) + 1 - (size + 2 * p))
    if kind == "avg" and any(e > 0 for e in extra):
        raise Unsupported(f"node {node}: average pooling whose ceil_mode adds windows past the input",
                          node=node, op=r["target"])
    fill = -math.inf if kind == "max" else 0.0
    y = x
    for i, (p, e) in enumerate(zip(padding, extra)):
        y = pad(b, y, first + i, p, p + max(0, e), fill)
    u = windows(b, y, first, kernel, stride, dilation)
    dims = [first + 1 + 2 * i for i in range(n)]
    out = shp(x)[:first] + tuple(shp(u)[first + 2 * i] for i in range(n))
    if kind == "max":
        return reshape(b, b.op("amax", u, dims=dims), out)
    total = reshape(b, b.op("sum", u, dims=dims), out)
    if divisor:
        return b.op("div", total, float(divisor))
    if count_include_pad or not any(padding):
        return b.op("div", total, float(math.prod(kernel)))
    ones = Val(const=np.ones(sizes))
    for i, p in enumerate(padding):
        ones = pad(b, ones, i, p, p)
    counts = b.op("sum", windows(b, ones, 0, kernel, stride, dilation), dims=[1 + 2 * i for i in range(n)])
    return b.op("div", total, Val(const=counts.const.reshape(out[first:])))


def _pool_dims(target: str) -> int:
    return 3 if "3d" in target else 2 if "2d" in target else 1


@reg("aten.avg_pool1d.default", "aten.avg_pool2d.default", "aten.avg_pool3d.default")
def _avg_pool(b, r, x, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
              divisor_override=None):
    return pool(b, r, x, kernel_size, stride, padding, 1, ceil_mode, "avg", _pool_dims(r["target"]),
                count_include_pad, divisor_override)


@reg("aten.max_pool1d.default")
def _max_pool1d(b, r, x, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return pool(b, r, x, kernel_size, stride, padding, dilation, ceil_mode, "max", 1)


def _without_indices(r, out) -> Val:
    """A max pooling's (values, indices): the indices are integers, refused if anything uses them."""
    return Val(items=[out, Val(refused=f"node {r['name']}: max-pooling indices are integers, which are not supported")])


@reg("aten.max_pool2d_with_indices.default", "aten.max_pool3d_with_indices.default")
def _max_pool(b, r, x, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _without_indices(r, pool(b, r, x, kernel_size, stride, padding, dilation, ceil_mode, "max",
                                    _pool_dims(r["target"])))


@reg("aten.adaptive_max_pool2d.default", "aten._adaptive_avg_pool2d.default",
     "aten.adaptive_max_pool1d.default", "aten._adaptive_avg_pool3d.default", "aten.adaptive_max_pool3d.default")
def _adaptive(b, r, x, output_size):
    """Adaptive pooling to a size that divides the input: fixed windows that tile it."""
    n = len(output_size)
    sizes = shp(x)[-n:]
    if any(s % o for s, o in zip(sizes, output_size)):
        raise Unsupported(f"node {r['name']}: adaptive pooling to a size that does not divide the input",
                          node=r["name"], op=r["target"])
    kernel = [s // o for s, o in zip(sizes, output_size)]
    out = pool(b, r, x, kernel, kernel, 0, 1, False, "avg" if "avg" in r["target"] else "max", n)
    return _without_indices(r, out) if "max" in r["target"] else out
