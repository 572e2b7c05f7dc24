"""Expressions over a loop nest's domain, built from the IR and emitted as C.

A group's value at a domain index is an expression tree (:func:`Trees.build`): ``Apply``
for each pointwise op the group computes, ``Load`` where it reads a materialised buffer
(offset and one stride per domain dim, from the :mod:`affine` map), ``Lit`` for literals,
and ``Reg`` for values the family keeps in a variable (a reduction's accumulator, a matmul
tile element). Views are followed, never computed. Trees are hashable, so
:class:`Emitter` writes each distinct subtree once, as a named temporary.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from kernels.codegen import cmath
from kernels.codegen.affine import (Affine, NotAffine, broadcast_to, through_flip, through_permute,
                                    through_reshape, through_slice, through_window)
from kernels.graph import opset
from kernels.graph.ir import Graph, Node


@dataclass(frozen=True)
class Load:
    buf: str
    offset: int
    strides: tuple[int, ...]
    dtype: str = "f32"


@dataclass(frozen=True)
class Lit:
    value: object


@dataclass(frozen=True)
class Reg:
    name: str
    dtype: str = "f32"


@dataclass(frozen=True)
class Apply:
    op: str
    args: tuple
    attrs: tuple          # sorted (key, value) pairs: hashable
    dtype: str = "f32"


Expr = Load | Lit | Reg | Apply


class NeedsBuffer(Exception):
    """``value`` must be materialised for this group's trees to be built."""

    def __init__(self, value: str, why: str):
        super().__init__(why)
        self.value, self.why = value, why


def _freeze(attrs: dict) -> tuple:
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in attrs.items()))


class Trees:
    """Builds trees over one domain.

    ``inline(name)`` says whether a pointwise node is computed here (else it is read from
    its buffer, ``buffer(name)`` names it); ``special(name, map)`` may claim a value (return
    an Expr) — families use it for accumulators and per-row registers.
    """

    def __init__(self, graph: Graph, dom_shape, *, inline: Callable[[str], bool], buffer: Callable[[str], str],
                 special: Callable[[str, Affine], Expr | None] | None = None, claimed=()):
        self.graph, self.dom = graph, tuple(dom_shape)
        self.claimed = set(claimed)   # values ``special`` answers for
        self.values = graph.values()
        self.inline, self.buffer, self.special = inline, buffer, special or (lambda n, m: None)

    def build(self, name: str, m: Affine | None = None) -> Expr:
        if m is None:
            m = Affine.identity(self.values[name].shape)
        return self._tree(name, m)

    def _tree(self, name: str, m: Affine) -> Expr:
        got = self.special(name, m)
        if got is not None:
            return got
        v = self.values[name]
        if isinstance(v, Node) and v.op == "reshape":
            # a reshape of a value read from memory reads the same bytes: the flat index of
            # the reshaped value is the offset in its (contiguous) buffer
            base = name
            while isinstance(self.values.get(base), Node) and self.values[base].op == "reshape":
                base = self.values[base].args[0]
            if not self._computed(base):
                off, strides = m.offset(v.shape)
                return Load(self.buffer(base), off, strides)
        if isinstance(v, Node) and opset.family(v.op) == "view":
            src = v.args[0]
            src_shape = self.values[src].shape
            try:
                inner = _through_view(v, m, src_shape, self.dom)
            except NotAffine as exc:
                err = NeedsBuffer(src, str(exc))
                err.via = name
                raise err from None
            return self._tree(src, inner)
        if isinstance(v, Node) and opset.family(v.op) == "pointwise" and (v.dtype == "bool" or self.inline(name)):
            args = []
            for a in v.args:
                if isinstance(a, str):
                    args.append(self._tree(a, broadcast_to(m, self.values[a].shape, v.shape, len(self.dom))))
                else:
                    args.append(Lit(a))
            return Apply(v.op, tuple(args), _freeze(v.attrs), v.dtype)
        off, strides = m.offset(v.shape)
        return Load(self.buffer(name), off, strides)


    def _computed(self, name: str) -> bool:
        """Is ``name`` computed inside the trees (rather than read from a buffer)?"""
        v = self.values[name]
        if name in self.claimed:
            return True
        return isinstance(v, Node) and opset.family(v.op) in ("pointwise", "view") and (
            v.dtype == "bool" or self.inline(name) or opset.family(v.op) == "view")


def _through_view(v: Node, m: Affine, src_shape, dom) -> Affine:
    if v.op == "permute":
        return through_permute(m, v.attrs["perm"])
    if v.op == "expand":
        return broadcast_to(m, src_shape, v.shape, len(dom))
    if v.op == "slice":
        return through_slice(m, v.attrs["dim"], v.attrs["start"], v.attrs["step"])
    if v.op == "flip":
        return through_flip(m, v.attrs["dims"], src_shape)
    if v.op == "window":
        return through_window(m, v.attrs["dim"], v.attrs["step"], v.attrs["dilation"])
    return through_reshape(m, src_shape, v.shape, dom)


# --------------------------------------------------------------------------- emission

class Emitter:
    """Writes trees as C statements into ``lines``; each distinct subtree once.

    ``index`` gives, per domain dim, the C expression of its loop index (``None`` for a dim
    of size 1, which never contributes). ``regs`` maps Reg names to C expressions."""

    def __init__(self, index: list[str | None], indent: str = "", regs: dict | None = None, prefix: str = "t"):
        self.index, self.indent = index, indent
        self.lines: list[str] = []
        self.names: dict = {}
        self.helpers: set = set()
        self.regs = regs or {}
        self.prefix = prefix
        self._n = 0

    def value(self, e: Expr) -> str:
        if isinstance(e, Lit):
            return cmath.lit(e.value)
        if isinstance(e, Reg):
            return self.regs.get(e.name, e.name)
        if isinstance(e, Load):
            return f"{e.buf}[{address(e, self.index)}]"
        hit = self.names.get(e)
        if hit is not None:
            return hit
        args = [self.value(a) for a in e.args]
        lits = [a.value if isinstance(a, Lit) else None for a in e.args]
        text, helpers = cmath.c_op(e.op, args, dict(e.attrs), lits)
        self.helpers.update(helpers)
        self._n += 1
        name = f"{self.prefix}{self._n}"
        ctype = "int" if e.dtype == "bool" else "float"
        self.lines.append(f"{self.indent}const {ctype} {name} = {text};")
        self.names[e] = name
        return name


def address(e: Load, index: list[str | None]) -> str:
    terms = [str(e.offset)] if e.offset else []
    for s, ix in zip(e.strides, index):
        if s and ix is not None:
            terms.append(ix if s == 1 else f"{ix} * {s}")
    return " + ".join(terms) or "0"


def loads(e: Expr, out: list | None = None) -> list[Load]:
    out = [] if out is None else out
    if isinstance(e, Load):
        out.append(e)
    elif isinstance(e, Apply):
        for a in e.args:
            loads(a, out)
    return out


def regs(e: Expr, out: set | None = None) -> set:
    out = set() if out is None else out
    if isinstance(e, Reg):
        out.add(e.name)
    elif isinstance(e, Apply):
        for a in e.args:
            regs(a, out)
    return out


def count_ops(e: Expr, seen: set | None = None) -> int:
    seen = set() if seen is None else seen
    if not isinstance(e, Apply) or e in seen:
        return 0
    seen.add(e)
    return 1 + sum(count_ops(a, seen) for a in e.args)
