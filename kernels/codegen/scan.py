"""Scan groups: an inclusive cumsum/cumprod along one dim, its pointwise producers inlined.

Each line along the scan dim is a running sum (product), so that loop is sequential; the
others are parallel. When the scan dim is not the innermost one, the innermost dim is
vectorised: a whole row of running values advances at each step of the scan (each output
row is the previous output row plus this input row). Knobs: THREADS, VEC.
"""
from __future__ import annotations

import math

from kernels.codegen import loops
from kernels.codegen.affine import contiguous_strides
from kernels.codegen.expr import Emitter, address, count_ops, loads
from kernels.codegen.family import Ctx, GroupCode
from kernels.spec import Param


class ScanFamily:
    name = "scan"

    def emit(self, group, ctx: Ctx) -> GroupCode:
        node = ctx.plan.nodes[group.anchors[0]]
        dom = tuple(node.shape)
        d = node.attrs["dim"]
        tree = ctx.trees(dom).build(node.args[0])
        out = ctx.write(node.name)
        st = contiguous_strides(dom)
        k = ctx.knob
        op = "+" if node.op == "cumsum" else "*"
        init = "0.0f" if node.op == "cumsum" else "1.0f"
        others = [x for x in range(len(dom)) if x != d and dom[x] > 1]
        inner = others[-1] if others and others[-1] > d else None   # vectorised alongside the scan
        outer = [x for x in others if x != inner]
        index = [None] * len(dom)
        for i, x in enumerate(outer):
            index[x] = f"o{i}"
        index[d] = "s"
        if inner is not None:
            index[inner] = "v"
        lines = []
        if outer:
            clause = f" collapse({len(outer)})" if len(outer) > 1 else ""
            lines.append(f"#pragma omp parallel for num_threads({k('THREADS')}){clause} schedule(static)")
        heads, ind = loops.for_loops([dom[x] for x in outer], [f"o{i}" for i in range(len(outer))], "")
        lines += heads
        from kernels.codegen.expr import Load
        here = address(Load("", 0, st), index)
        if inner is None:
            lines.append(f"{ind}float run = {init};")
            lines.append(f"{ind}for (int64_t s = 0; s < {dom[d]}; s++) {{")
            em = Emitter(index, ind + "    ")
            val = em.value(tree)
            lines += em.lines
            lines.append(f"{ind}    run = run {op} {val};")
            lines.append(f"{ind}    {out}[{here}] = run;")
            lines.append(f"{ind}}}")
        else:
            lines.append(f"{ind}for (int64_t s = 0; s < {dom[d]}; s++) {{")
            lines.append(f"#if {k('VEC')}\n#pragma omp simd simdlen({k('VEC')})\n#else\n#pragma omp simd\n#endif")
            lines.append(f"{ind}    for (int64_t v = 0; v < {dom[inner]}; v++) {{")
            em = Emitter(index, ind + "        ")
            val = em.value(tree)
            lines += em.lines
            lines.append(f"{ind}        const float before = s == 0 ? {init} : {out}[{here} - {st[d]}];")
            lines.append(f"{ind}        {out}[{here}] = before {op} {val};")
            lines.append(f"{ind}    }}")
            lines.append(f"{ind}}}")
        lines += loops.close(len(outer), ind)
        total = math.prod(dom)
        params = [ctx.threads_param(total * (count_ops(tree) + 1) * max(1, len(outer))),
                  Param(k("VEC"), "choice", choices=(0, 8, 16), default=16,
                        help="simdlen of the loop across rows (0: GCC's choice)")]
        nbytes = 4.0 * total * (1 + len({ld.buf for ld in loads(tree)}))
        return GroupCode("\n".join(lines), params=params, helpers=em.helpers, flops=float(total * (count_ops(tree) + 1)),
                         bytes=nbytes, summary={"family": "scan", "op": node.op, "shape": list(dom), "dim": d})


FAMILY = ScanFamily()
