"""Pointwise groups: any DAG of elementwise ops over one output shape, one loop nest.

Every output of the group is computed at each domain index from loads of its inputs
(broadcast and viewed inputs are strides, zero where broadcast) and stored; shared
subexpressions are computed once. Dims that every access walks contiguously are merged, so
most groups are one long loop; that loop is cut into BLOCK-sized chunks that the threads
share, each chunk vectorised (``omp simd``), optionally with streaming stores when the
outputs are aligned whole lines (NT). Knobs: THREADS, VEC, BLOCK, NT.
"""
from __future__ import annotations

import math

from kernels.codegen import loops
from kernels.codegen.affine import contiguous_strides
from kernels.codegen.expr import Emitter, Load, address, count_ops, loads
from kernels.codegen.family import Ctx, GroupCode, vec_param
from kernels.spec import Param


class PointwiseFamily:
    name = "pointwise"

    def emit(self, group, ctx: Ctx) -> GroupCode:
        dom = group.domain
        return emit_pointwise(ctx, dom, [(v, v, 0, contiguous_strides(dom)) for v in group.outputs])


def emit_pointwise(ctx: Ctx, dom, targets, knob_prefix: str = "") -> GroupCode:
    """The loop nest over ``dom`` computing, for each ``(value, buffer, offset, strides)`` of
    ``targets``, ``value`` at every index and storing it into ``buffer``'s memory at
    ``offset + sum(index * strides)`` — shared with the cat family, whose segments are
    pointwise nests writing into a slice of the concatenation."""
    trees = ctx.trees(dom)
    outputs = [t[0] for t in targets]
    exprs = [(v, trees.build(v)) for v in outputs]
    stores = [(v, ctx.write(buf), off, st) for v, buf, off, st in targets]
    all_strides = [s for _, _, _, s in stores] + [ld.strides for _, e in exprs for ld in loads(e)]
    dims = loops.coalesce(dom, all_strides)
    exprs = [(v, loops.remap(e, dims)) for v, e in exprs]
    sizes = dims.sizes or (1,)
    store_strides = [loops.merged_strides(s, dims) if dims.sizes else (1,) for _, _, _, s in stores]
    total = math.prod(dom)
    ops = sum(count_ops(e) for _, e in exprs)
    k = lambda name: ctx.knob(knob_prefix + name)   # noqa: E731
    threads = ctx.threads_param(total * max(ops, 1))
    threads = Param(k("THREADS"), threads.kind, choices=threads.choices, default=threads.default, help=threads.help)
    params = [threads, Param(k("VEC"), "choice", choices=(0, 8, 16), default=16, help=vec_param(ctx).help)]
    lines = []
    inner = sizes[-1]
    outer = sizes[:-1]
    names = [f"i{d}" for d in range(len(sizes))]
    if not outer:
        # one long loop: chunks shared by the threads, each chunk vectorised
        params.append(Param(k("BLOCK"), "choice", choices=(256, 1024, 4096, 16384), default=4096,
                            help="elements per chunk a thread takes at a time"))
        lines.append(f"#pragma omp parallel for num_threads({k('THREADS')}) schedule(static)")
        lines.append(f"for (int64_t c0 = 0; c0 < {inner}; c0 += {k('BLOCK')}) {{")
        lines.append(f"    const int64_t c1 = c0 + {k('BLOCK')} < {inner} ? c0 + {k('BLOCK')} : {inner};")
        lines.append(_simd(k))
        lines.append("    for (int64_t i0 = c0; i0 < c1; i0++) {")
        body_indent = "        "
        index = ["i0"]
        closers = ["    }", "}"]
    else:
        collapse = len(outer)
        clause = f" collapse({collapse})" if collapse > 1 else ""
        lines.append(f"#pragma omp parallel for num_threads({k('THREADS')}){clause} schedule(static)")
        heads, ind = loops.for_loops(outer, names[:-1], "")
        lines += heads
        lines.append(_simd(k))
        lines.append(f"{ind}for (int64_t {names[-1]} = 0; {names[-1]} < {inner}; {names[-1]}++) {{")
        body_indent = ind + "    "
        index = names
        closers = loops.close(len(outer) + 1, body_indent)
    em = Emitter(index, body_indent)
    results = [(v, em.value(e)) for v, e in exprs]
    lines += em.lines
    for (v, buf, off, _), st, (_, val) in zip(stores, store_strides, results):
        lines.append(f"{body_indent}{buf}[{address(Load('', off, tuple(st)), index)}] = {val};")
    lines += closers
    loaded = sum(4 * math.prod(dom) for _, e in exprs for ld in loads(e) if any(ld.strides)) or 4 * total
    return GroupCode("\n".join(lines), params=params, helpers=em.helpers,
                     flops=float(total * ops), bytes=float(loaded + 4 * total * len(outputs)),
                     summary={"family": "pointwise", "ops": _ops(ctx, outputs), "shape": list(dom)})


def _simd(k) -> str:
    v = k("VEC")
    return f"#if {v}\n#pragma omp simd simdlen({v})\n#else\n#pragma omp simd\n#endif"


def _ops(ctx: Ctx, outputs) -> list[str]:
    members = set(ctx.group.members)
    return [ctx.plan.nodes[m].op for m in ctx.group.members if m in members and m in ctx.plan.nodes][:32]


FAMILY = PointwiseFamily()
