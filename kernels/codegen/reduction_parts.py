"""Pieces of the reduction family (kernels/codegen/reduction.py): the accumulator
vocabulary, the per-row map, small C helpers, and the column layout — rows reduced side by
side in vector lanes when the innermost dim is kept (a sum over dim 1 of ``[B, C, H]``)."""
from __future__ import annotations

from kernels.codegen import loops
from kernels.codegen.affine import Affine
from kernels.codegen.expr import Apply, Emitter

INIT = {"sum": "0.0f", "mean": "0.0f", "prod": "1.0f", "amax": "-INFINITY", "amin": "INFINITY", "var": "0.0f"}
CLAUSE = {"sum": "+", "mean": "+", "var": "+", "prod": "*", "amax": "max", "amin": "min"}


def row_map(dom, red, shape) -> Affine:
    """The map from the domain onto a per-row value of ``shape`` (squeeze-equal to the row
    shape): its dims of size > 1 follow the outer dims of size > 1, in order."""
    outer = [d for d in range(len(dom)) if d not in red and dom[d] > 1]
    const, coef, k = [], [], 0
    for s in shape:
        row = [0] * len(dom)
        if s > 1:
            row[outer[k]] = 1
            k += 1
        const.append(0)
        coef.append(tuple(row))
    return Affine(tuple(const), tuple(coef), len(dom))


def _contains(e, t) -> bool:
    if e == t:
        return True
    return isinstance(e, Apply) and any(_contains(a, t) for a in e.args)


def _substitute(e, t, repl):
    if e == t:
        return repl
    if isinstance(e, Apply):
        return Apply(e.op, tuple(_substitute(a, t, repl) for a in e.args), e.attrs, e.dtype)
    return e


def _permute(e, order):
    from kernels.codegen.expr import Apply, Load
    if isinstance(e, Load):
        return Load(e.buf, e.offset, tuple(e.strides[d] for d in order), e.dtype)
    if isinstance(e, Apply):
        return Apply(e.op, tuple(_permute(a, order) for a in e.args), e.attrs, e.dtype)
    return e


def _accumulate(name, op, val, lane="") -> str:
    acc = f"acc_{name}{lane}"
    if op in ("sum", "mean", "var"):
        return f"{acc} += {val};"
    if op == "prod":
        return f"{acc} *= {val};"
    if op == "amax":
        return f"{acc} = {val} > {acc} ? {val} : {acc};"
    return f"{acc} = {val} < {acc} ? {val} : {acc};"


def _simd(k, clause) -> str:
    v = k("VEC")
    return f"#if {v}\n#pragma omp simd simdlen({v}){clause}\n#else\n#pragma omp simd{clause}\n#endif"


def _addr(off, strides, index) -> str:
    terms = [str(off)] if off else []
    for s, ix in zip(strides, index):
        if s and ix is not None:
            terms.append(ix if s == 1 else f"{ix} * {s}")
    return " + ".join(terms) or "0"


class ColumnLayout:
    """The column layout of ``reduction._Emit`` (uses its schedule and shared pieces)."""

    def _column(self) -> str:
        ctx, k = self.ctx, self.ctx.knob
        vdim = max(d for d in range(len(self.dom)) if self.dom[d] > 1)
        outer = [d for d in range(len(self.dom)) if d not in self.red and d != vdim and self.dom[d] > 1]
        reds = [d for d in sorted(self.red) if self.dom[d] > 1]
        nv = self.dom[vdim]
        index = [None] * len(self.dom)
        for i, d in enumerate(outer):
            index[d] = f"o{i}"
        for i, d in enumerate(reds):
            index[d] = f"r{i}"
        index[vdim] = "(vb + j)"
        lines = []
        self.helpers = set()
        cols = k("COLS")
        nblocks = f"(({nv} + {cols} - 1) / {cols})"
        clause = f" collapse({len(outer) + 1})" if outer else ""
        lines.append(f"#pragma omp parallel for num_threads({k('THREADS')}){clause} schedule(static)")
        heads, ind = loops.for_loops([self.dom[d] for d in outer], [f"o{i}" for i in range(len(outer))], "")
        lines += heads
        lines.append(f"{ind}for (int64_t blk = 0; blk < {nblocks}; blk++) {{")
        ind += "    "
        lines.append(f"{ind}const int64_t vb = blk * {cols};")
        lines.append(f"{ind}const int64_t vn = {nv} - vb < {cols} ? {nv} - vb : {cols};")
        self._regmap = {}
        ident = lambda t: t   # noqa: E731
        self._col_rows(-1, index, lines, ind, ident)
        for p in range(self.passes):
            accs = self._pass_accs(p)
            for name, op, _ in accs:
                lines.append(f"{ind}float acc_{name}[{cols}];")
                lines.append(f"{ind}for (int64_t j = 0; j < {cols}; j++) acc_{name}[j] = {INIT[op]};")
            heads, ind2 = loops.for_loops([self.dom[d] for d in reds], [f"r{i}" for i in range(len(reds))], ind)
            lines += heads
            lines.append(_simd(k, ""))
            lines.append(f"{ind2}for (int64_t j = 0; j < vn; j++) {{")
            em = Emitter(index, ind2 + "    ", regs={n: f"{c}[j]" for n, c in self._regmap.items()})
            for name, op, tree in accs:
                val = em.value(tree)
                lines += em.lines
                em.lines = []
                lines.append(ind2 + "    " + _accumulate(name, op, val, "[j]"))
            self.helpers |= em.helpers
            lines.append(ind2 + "}")
            lines += loops.close(len(reds), ind2)
            self._finish_pass(p, accs, lines, ind, column=True)
            self._col_rows(p, index, lines, ind, ident)
        self._col_store_rows(index, lines, ind)
        if self.full:
            heads, ind2 = loops.for_loops([self.dom[d] for d in reds], [f"r{i}" for i in range(len(reds))], ind)
            lines += heads
            lines.append(_simd(k, ""))
            lines.append(f"{ind2}for (int64_t j = 0; j < vn; j++) {{")
            em = Emitter(index, ind2 + "    ", regs={n: f"{c}[j]" for n, c in self._regmap.items()}, prefix="f")
            vals = [(v, em.value(self.trees.build(v))) for v in self.full]
            lines += em.lines
            for v, val in vals:
                off, st = Affine.identity(self.dom).offset(self.dom)
                lines.append(f"{ind2}    {ctx.names[v]}[{_addr(off, st, index)}] = {val};")
            self.helpers |= em.helpers
            lines.append(ind2 + "}")
            lines += loops.close(len(reds), ind2)
        lines.append(ind[:-4] + "}")
        lines += loops.close(len(outer), ind[:-4])
        return "\n".join(lines)

    def _col_rows(self, p, index, lines, ind, _):
        ready = [r for r in self.rows if self.done_after[r] == p]
        if not ready:
            return
        cols = self.ctx.knob("COLS")
        for r in ready:
            lines.append(f"{ind}float row_{r}[{cols}];")
        lines.append(_simd(self.ctx.knob, ""))
        lines.append(f"{ind}for (int64_t j = 0; j < vn; j++) {{")
        em = Emitter(index, ind + "    ", prefix="w")
        for r in ready:
            em.regs = {n: f"{c}[j]" for n, c in self._regmap.items()}
            val = em.value(self.row_tree[r])
            lines += em.lines
            em.lines = []
            lines.append(f"{ind}    row_{r}[j] = {val};")
            self._regmap[r] = f"row_{r}"
        self.helpers |= em.helpers
        lines.append(f"{ind}}}")

    def _col_store_rows(self, index, lines, ind):
        stored = [v for v in self.g.outputs if v in self.rows or v in self.reductions]
        if not stored:
            return
        lines.append(f"{ind}for (int64_t j = 0; j < vn; j++) {{")
        for v in stored:
            off, st = row_map(self.dom, self.red, self.values[v].shape).offset(self.values[v].shape)
            lines.append(f"{ind}    {self.ctx.names[v]}[{_addr(off, st, index)}] = {self._regmap[v]}[j];")
        lines.append(f"{ind}}}")
