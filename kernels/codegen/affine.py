"""Affine index maps: how a loop nest's index reaches an element of some value.

A group's code loops over a *domain* (a shape). Every value it reads is reached through an
:class:`Affine` map from the domain index ``i`` to the value's own index:
``v[j] = const[j] + sum_d coef[j][d] * i[d]``. Elementwise ops broadcast (rows dropped or
zeroed), ``permute``/``expand``/``slice``/``flip``/``window`` are exact affine transforms, and ``reshape`` is one
whenever the sizes it splits line up with how the domain walks them (:func:`through_reshape`
tries, and says no otherwise: the value is then materialised, where any reshape is free).
A materialised buffer turns the map into an offset and one stride per domain dim.
"""
from __future__ import annotations

import math
from dataclasses import dataclass


class NotAffine(Exception):
    """This view cannot be followed as an affine map from the domain."""


@dataclass(frozen=True)
class Affine:
    const: tuple[int, ...]
    coef: tuple[tuple[int, ...], ...]   # one row per value dim, one column per domain dim
    ndom: int = -1                      # domain rank (needed when the value is 0-d)

    def __post_init__(self):
        if self.ndom < 0:
            object.__setattr__(self, "ndom", len(self.coef[0]) if self.coef else 0)

    @classmethod
    def identity(cls, shape) -> "Affine":
        n = len(shape)
        return cls(tuple(0 for _ in range(n)), tuple(tuple(int(r == c) for c in range(n)) for r in range(n)), n)

    @property
    def rank(self) -> int:
        return len(self.const)

    def offset(self, shape) -> tuple[int, tuple[int, ...]]:
        """(offset, strides over the domain) of a contiguous buffer of ``shape``."""
        cs = contiguous_strides(shape)
        ndom = self.ndom
        off = sum(c * s for c, s in zip(self.const, cs))
        strides = tuple(sum(self.coef[j][d] * cs[j] for j in range(len(cs))) for d in range(ndom))
        return off, strides


def contiguous_strides(shape) -> tuple[int, ...]:
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= s
    return tuple(reversed(out))


def zero(rank: int, ndom: int) -> Affine:
    return Affine(tuple(0 for _ in range(rank)), tuple(tuple(0 for _ in range(ndom)) for _ in range(rank)), ndom)


def broadcast_to(m: Affine, src_shape, dst_shape, ndom: int) -> Affine:
    """The map into an operand of ``src_shape`` that is broadcast up to ``dst_shape``."""
    lead = len(dst_shape) - len(src_shape)
    const, coef = [], []
    for j, s in enumerate(src_shape):
        if s == 1:
            const.append(0)
            coef.append(tuple(0 for _ in range(ndom)))
        else:
            const.append(m.const[j + lead])
            coef.append(m.coef[j + lead])
    return Affine(tuple(const), tuple(coef), ndom)


def through_permute(m: Affine, perm) -> Affine:
    """v = permute(u, perm): v[j] = u[perm[j]]; returns the map into u."""
    const = [0] * len(perm)
    coef = [None] * len(perm)
    for j, p in enumerate(perm):
        const[p] = m.const[j]
        coef[p] = m.coef[j]
    return Affine(tuple(const), tuple(coef), m.ndom)


def through_flip(m: Affine, dims, shape) -> Affine:
    """v = flip(u, dims): u[j] = n_j - 1 - v[j] along the flipped dims (negative strides)."""
    const, coef = list(m.const), list(m.coef)
    for d in dims:
        const[d] = shape[d] - 1 - m.const[d]
        coef[d] = tuple(-c for c in m.coef[d])
    return Affine(tuple(const), tuple(coef), m.ndom)


def through_slice(m: Affine, dim: int, start: int, step: int) -> Affine:
    const = list(m.const)
    coef = list(m.coef)
    const[dim] = start + step * m.const[dim]
    coef[dim] = tuple(step * c for c in m.coef[dim])
    return Affine(tuple(const), tuple(coef), m.ndom)


def through_window(m: Affine, dim: int, step: int, dilation: int) -> Affine:
    """v = window(u, dim): v[.., w, e, ..] = u[.., step * w + dilation * e, ..] — the sliding
    windows of a convolution or a pooling, one dim more than u."""
    const = list(m.const[:dim]) + [step * m.const[dim] + dilation * m.const[dim + 1]] + list(m.const[dim + 2:])
    joined = tuple(step * a + dilation * b for a, b in zip(m.coef[dim], m.coef[dim + 1]))
    coef = list(m.coef[:dim]) + [joined] + list(m.coef[dim + 2:])
    return Affine(tuple(const), tuple(coef), m.ndom)


def through_reshape(m: Affine, src_shape, dst_shape, dom_shape) -> Affine:
    """v = reshape(u): the map into u, or :class:`NotAffine`.

    The flat index of v is affine in the domain index; it is split into u's dims from the
    innermost out. A term ``c * i_d`` goes wholly to the current dim when its whole range
    fits inside the dim (``c * (n_d - 1) < size``) or wholly to the dims above when ``c``
    is a multiple of the size; anything else straddles a boundary and is not affine."""
    ndom = len(dom_shape)
    flat_c = sum(c * s for c, s in zip(m.const, contiguous_strides(dst_shape)))
    vs = contiguous_strides(dst_shape)
    flat = [sum(m.coef[j][d] * vs[j] for j in range(len(dst_shape))) for d in range(ndom)]
    const_out, coef_out = [0] * len(src_shape), [None] * len(src_shape)
    terms = [(flat[d], d) for d in range(ndom) if flat[d] != 0 and dom_shape[d] > 1]
    rem_c = flat_c
    for j in reversed(range(len(src_shape))):
        size = src_shape[j]
        here = [0] * ndom
        rest = []
        span = rem_c % size
        for c, d in terms:
            if c % size == 0:
                rest.append((c // size, d))
            elif c * (dom_shape[d] - 1) < size:
                here[d] = c
                span += c * (dom_shape[d] - 1)
            else:
                raise NotAffine(f"reshape {list(src_shape)} -> {list(dst_shape)} splits a loop")
        if span >= size:
            raise NotAffine(f"reshape {list(src_shape)} -> {list(dst_shape)} wraps a dim")
        const_out[j] = rem_c % size
        coef_out[j] = tuple(here)
        rem_c //= size
        terms = rest
    if terms or rem_c:
        raise NotAffine("reshape leaves index terms over")
    return Affine(tuple(const_out), tuple(coef_out), ndom)


def numel(shape) -> int:
    return math.prod(shape)
