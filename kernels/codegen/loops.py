"""Loop nests: merging domain dims that every access walks contiguously, and writing loops.

After a family has built its trees over the domain, :func:`coalesce` finds the dims that
can be walked as one (for every load and store, ``stride[d] == stride[d+1] * size[d+1]``)
and drops size-1 dims; :func:`remap` rewrites the trees' loads onto the merged dims. A
``[2, 3, 4, 8]`` elementwise op over contiguous buffers becomes one loop of 192, which GCC
vectorises without remainders per row.
"""
from __future__ import annotations

from dataclasses import dataclass

from kernels.codegen.expr import Apply, Expr, Load


@dataclass(frozen=True)
class Dims:
    """Merged loop dims: ``sizes[k]`` and, per original dim, the merged dim it went to."""

    sizes: tuple[int, ...]
    groups: tuple[tuple[int, ...], ...]    # original dims of each merged dim, outermost first


def coalesce(dom, stride_lists, keep_apart: set | None = None) -> Dims:
    """Merge adjacent dims of ``dom`` where every strides list is contiguous across them.
    Dims in different classes of ``keep_apart`` (a set of dims) are never merged together."""
    keep_apart = keep_apart or set()
    live = [d for d in range(len(dom)) if dom[d] > 1]
    groups: list[list[int]] = []
    for d in live:
        if groups:
            prev = groups[-1]
            inner = prev[-1]
            same_class = (inner in keep_apart) == (d in keep_apart)
            if same_class and all(s[inner] == s[d] * dom[d] for s in stride_lists):
                prev.append(d)
                continue
        groups.append([d])
    sizes = []
    for grp in groups:
        n = 1
        for d in grp:
            n *= dom[d]
        sizes.append(n)
    return Dims(tuple(sizes), tuple(tuple(g) for g in groups))


def merged_strides(strides, dims: Dims) -> tuple[int, ...]:
    """The stride of each merged dim is that of its innermost original dim."""
    return tuple(strides[g[-1]] for g in dims.groups)


def remap(e: Expr, dims: Dims) -> Expr:
    if isinstance(e, Load):
        return Load(e.buf, e.offset, merged_strides(e.strides, dims), e.dtype)
    if isinstance(e, Apply):
        return Apply(e.op, tuple(remap(a, dims) for a in e.args), e.attrs, e.dtype)
    return e


def for_loops(sizes, names, indent: str) -> tuple[list[str], str]:
    """``for`` headers over ``sizes`` with loop variables ``names``; the body's indent."""
    lines = []
    for size, name in zip(sizes, names):
        lines.append(f"{indent}for (int64_t {name} = 0; {name} < {size}; {name}++) {{")
        indent += "    "
    return lines, indent


def close(n: int, indent: str) -> list[str]:
    out = []
    for k in range(n):
        out.append(indent[: len(indent) - 4 * (k + 1)] + "}")
    return out
