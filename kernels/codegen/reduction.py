"""Reduction groups: reductions over one domain with their prologue and epilogue, one pass
over memory plus passes over cache-resident rows.

The domain is the reductions' input shape; its dims split into *outer* dims (kept) and
*reduced* dims. Per outer index (a "row"), the group runs passes over the reduced dims:
each pass computes every reduction whose inputs are ready (softmax: the max, then the sum of
exp(x - max); a norm: the mean, then the variance), per-row values are computed between
passes (rsqrt(var + eps)), and a last pass writes the full-size outputs. Prologue ops are
inlined into every pass that reads them.

Two loop shapes, chosen by layout:

- ``row``: the innermost dim is reduced. Outer dims are the parallel loop; reduced dims are
  walked inside, the innermost vectorised with ``omp simd reduction``.
- ``column``: the innermost dim is kept (e.g. a sum over dim 1 of ``[B, C, H]``). Rows are
  vectorised across it in blocks of COLS, each lane accumulating its own row while the
  reduced dims are walked.

Knobs: THREADS, VEC, COLS (column). Deterministic: each row is reduced by one thread in a
fixed order.
"""
from __future__ import annotations

import math

from kernels.codegen import loops
from kernels.codegen.affine import Affine
from kernels.codegen.expr import Apply, Emitter, NeedsBuffer, Reg, count_ops, loads, regs
from kernels.codegen.family import Ctx, GroupCode
from kernels.codegen.partition import row_shape, squeezed
from kernels.codegen.reduction_parts import (CLAUSE, INIT, ColumnLayout, _accumulate, _addr, _contains,  # noqa: F401
                                             _permute, _simd, _substitute, row_map)
from kernels.spec import Param


class ReductionFamily:
    name = "reduction"

    def emit(self, group, ctx: Ctx) -> GroupCode:
        return _Emit(group, ctx).code()


class _Emit(ColumnLayout):
    def __init__(self, g, ctx: Ctx):
        self.g, self.ctx = g, ctx
        self.dom, self.red = tuple(g.domain), set(g.reduce_dims)
        self.values = ctx.graph.values()
        self.row_shape = row_shape(self.dom, self.red)
        members = set(g.members)
        self.reductions = [m for m in g.members if m in g.anchors]
        self.rows = [m for m in g.members if m not in g.anchors and self._rowlike(m)]
        self.full = [m for m in g.outputs if m not in self.reductions and m not in self.rows]
        for m in self.full:
            if self.values[m].shape != self.dom:
                raise NeedsBuffer(m, f"{m} has neither the row nor the full shape of its reduction group")
        self.members = members
        self.canon = self._canonical()
        self._exclude = None
        self.trees = ctx.trees(self.dom, special=self._special, claimed=set(self.reductions) | set(self.rows))
        inner = max((d for d in range(len(self.dom)) if self.dom[d] > 1), default=None)
        self.column = inner is not None and inner not in self.red

    def _rowlike(self, m) -> bool:
        shape = self.values[m].shape
        return squeezed(shape) == squeezed(self.row_shape) and math.prod(shape) == math.prod(self.row_shape)

    def _canonical(self):
        strides, acc = [0] * len(self.dom), 1
        for d in reversed(range(len(self.dom))):
            if d not in self.red:
                strides[d] = acc if self.dom[d] > 1 else 0
                acc *= self.dom[d]
        return tuple(strides)

    def _special(self, name, m):
        if name == self._exclude or (name not in self.reductions and name not in self.rows):
            return None
        off, strides = m.offset(self.values[name].shape)
        canon = tuple(s if self.dom[d] > 1 else 0 for d, s in enumerate(self.canon))
        got = tuple(s if self.dom[d] > 1 else 0 for d, s in enumerate(strides))
        if off != 0 or got != canon:
            raise NeedsBuffer(name, f"{name} is read across rows of its reduction")
        return Reg(name)

    def _row_tree(self, name):
        self._exclude = name
        try:
            return self.trees.build(name, row_map(self.dom, self.red, self.values[name].shape))
        finally:
            self._exclude = None

    # ------------------------------------------------------------------ schedule

    def schedule(self):
        """Pass index of each reduction (var takes two), availability of each row value."""
        node = self.ctx.plan.nodes
        self.red_tree = {r: self.trees.build(node[r].args[0]) for r in self.reductions}
        self.row_tree = {r: self._row_tree(r) for r in self.rows}
        done_after: dict[str, int] = {}       # value -> last pass it needs (-1: before pass 0)
        pending = list(self.reductions) + list(self.rows)
        for _ in range(len(pending) * 2 + 2):
            progress = False
            for v in list(pending):
                tree = self.red_tree.get(v) if v in self.reductions else self.row_tree[v]
                need = regs(tree)
                if not need <= set(done_after):
                    continue
                ready = max((done_after[n] for n in need), default=-1)
                if v in self.reductions:
                    start = ready + 1
                    done_after[v] = start + (1 if node[v].op == "var" else 0)
                    self.start = getattr(self, "start", {})
                    self.start[v] = start
                else:
                    done_after[v] = ready
                pending.remove(v)
                progress = True
            if not pending or not progress:
                break
        if pending:
            raise NeedsBuffer(pending[0], "the reductions of a group depend on each other in a cycle")
        self.done_after = done_after
        self.passes = max((done_after[r] for r in self.reductions), default=-1) + 1

    # ------------------------------------------------------------------ code

    def code(self) -> GroupCode:
        self.schedule()
        ctx, k = self.ctx, self.ctx.knob
        for v in self.g.outputs:
            ctx.write(v)
        all_trees = list(self.red_tree.values()) + list(self.row_tree.values()) + \
            [self.trees.build(v) for v in self.full]
        ops = sum(count_ops(t) for t in all_trees) + 2
        work = math.prod(self.dom) * ops * (self.passes + 1)
        params = [ctx.threads_param(work), Param(k("VEC"), "choice", choices=(0, 8, 16), default=16,
                                                   help="simdlen of the inner loops (0: GCC's choice)")]
        if self.column:
            params.append(Param(k("COLS"), "choice", choices=(8, 16, 32, 64), default=16,
                                help="rows reduced side by side, one per vector lane"))
            body = self._column()
        else:
            self.stage = self._stageable()
            if self.stage:
                params.append(Param(k("STAGE"), "bool", default=1,
                                    help="keep the last pass's per-element value (softmax: exp(x - max)) in the "
                                         "output row and rescale it, instead of computing it again"))
            body = self._row()
        loaded = 4 * math.prod(self.dom) * max(1, len({ld.buf for t in all_trees for ld in loads(t)}))
        written = sum(4 * math.prod(self.values[v].shape) for v in self.g.outputs)
        summary = {"family": "reduction", "shape": list(self.dom), "dims": sorted(self.red),
                   "reductions": [self.ctx.plan.nodes[r].op for r in self.reductions],
                   "ops": [self.ctx.plan.nodes[m].op for m in self.g.members][:32], "layout":
                   "column" if self.column else "row", "matches": self._matches()}
        return GroupCode(body, params=params, helpers=self.helpers, flops=float(work), bytes=float(loaded + written),
                         summary=summary)

    def _stageable(self) -> dict:
        """{full output: subtree} where the last pass accumulates a subtree of the output's
        own tree: that value can wait in the output's row, written by the last pass."""
        if not self.passes:
            return {}
        last = [t for _, _, t in self._pass_accs(self.passes - 1) if isinstance(t, Apply)]
        out = {}
        for v in self.full:
            tree = self.trees.build(v)
            for t in last:
                if t != tree and _contains(tree, t):
                    out[v] = t
                    break
        return out

    def _matches(self) -> str | None:
        ops = [self.ctx.plan.nodes[m].op for m in self.g.members]
        last = max(self.red) == len(self.dom) - 1 and len(self.red) == 1
        if not last:
            return None
        if sorted(ops) == sorted(["amax", "sub", "exp", "sum", "div"]):
            return "softmax"
        if ops.count("mean") == 2 and "rsqrt" in ops and "sub" in ops:
            return "layernorm"
        if ops.count("mean") == 1 and "rsqrt" in ops and "sub" not in ops:
            return "rmsnorm"
        return None

    def _loop_dims(self, trees_list, order):
        """Coalesced loop dims over the domain permuted into ``order``, outer and reduced
        dims kept apart."""
        dom_p = [self.dom[d] for d in order]
        stride_lists = []
        for t in trees_list:
            for ld in loads(t):
                stride_lists.append(tuple(ld.strides[d] for d in order))
        for v in self.full:
            off, st = Affine.identity(self.dom).offset(self.dom)
            stride_lists.append(tuple(st[d] for d in order))
        keep = {i for i, d in enumerate(order) if d in self.red}
        return dom_p, loops.coalesce(dom_p, stride_lists, keep_apart=keep), keep

    def _row(self) -> str:
        k = self.ctx.knob
        order = [d for d in range(len(self.dom)) if d not in self.red] + sorted(self.red)
        trees_all = list(self.red_tree.values()) + list(self.row_tree.values()) + \
            [self.trees.build(v) for v in self.full]
        dom_p, dims, keep = self._loop_dims(trees_all, order)
        classes = [all(order[d] in self.red for d in grp) for grp in dims.groups]
        outer_sizes = [s for s, c in zip(dims.sizes, classes) if not c]
        inner_sizes = [s for s, c in zip(dims.sizes, classes) if c]
        onames = [f"o{i}" for i in range(len(outer_sizes))]
        inames = [f"i{i}" for i in range(len(inner_sizes))]
        index, oi, ii = [], 0, 0
        for c in classes:
            if c:
                index.append(inames[ii])
                ii += 1
            else:
                index.append(onames[oi])
                oi += 1
        perm = lambda t: loops.remap(_permute(t, order), dims)   # noqa: E731
        lines = []
        self.helpers = set()
        if outer_sizes:
            clause = f" collapse({len(outer_sizes)})" if len(outer_sizes) > 1 else ""
            lines.append(f"#pragma omp parallel for num_threads({k('THREADS')}){clause} schedule(static)")
        heads, ind = loops.for_loops(outer_sizes, onames, "")
        lines += heads
        rowem = Emitter(index, ind, prefix="w")
        self._rows_ready(-1, rowem, perm, lines)
        # one row only (a reduction to a single value): its passes are split over the threads,
        # each thread's partial kept apart and combined in thread order (deterministic)
        split = not outer_sizes
        for p in range(self.passes):
            accs = self._pass_accs(p)
            for name, op, _ in accs:
                lines.append(f"{ind}float acc_{name} = {INIT[op]};")
            clause = "".join(f" reduction({CLAUSE[op]}:acc_{name})" for name, op, _ in accs)
            base_ind = ind
            if split:
                lines += self._split_open(p, accs, inner_sizes[0], ind)
                ind = ind + "    "
            heads, ind2 = self._inner_heads(inner_sizes, inames, ind, split)
            lines += heads
            lines.append(_simd(k, clause))
            lo = "lo" if split and len(inner_sizes) == 1 else "0"
            hi = "hi" if split and len(inner_sizes) == 1 else inner_sizes[-1]
            lines.append(f"{ind2}for (int64_t {inames[-1]} = {lo}; {inames[-1]} < {hi}; "
                         f"{inames[-1]}++) {{")
            em = Emitter(index, ind2 + "    ", regs=dict(self._regmap))
            for name, op, tree in accs:
                val = em.value(perm(tree))
                lines += em.lines
                em.lines = []
                lines.append(ind2 + "    " + _accumulate(name, op, val))
                if p == self.passes - 1:
                    for v, t in self.stage.items():
                        if t == tree:
                            lines += [f"#if {k('STAGE')}", f"{ind2}    {self._full_addr(v, order, dims, index)} = {val};",
                                      "#endif"]
            self.helpers |= em.helpers
            lines.append(ind2 + "}")
            lines += loops.close(len(inner_sizes) - 1, ind2)
            if split:
                ind = base_ind
                lines += self._split_close(p, accs, ind)
            self._finish_pass(p, accs, lines, ind)
            self._rows_ready(p, rowem, perm, lines)
        self._store_rows(rowem, perm, lines, ind)
        if self.full:
            forms = [(False, None)] if not self.stage else [(True, f"#if {k('STAGE')}"), (False, "#else")]
            for staged, pre in forms:
                if pre:
                    lines.append(pre)
                if split:
                    lines.append(f"#pragma omp parallel for num_threads({k('THREADS')}) schedule(static)")
                    if len(inner_sizes) == 1:
                        lines.append(f"{ind}for (int64_t c0 = 0; c0 < {self._chunks(inner_sizes[0])}; c0++) {{")
                        lines.append(f"{ind}    const int64_t lo = c0 * 4096, hi = lo + 4096 < {inner_sizes[0]} ? "
                                     f"lo + 4096 : {inner_sizes[0]};")
                        heads, ind2 = [], ind + "    "
                    else:
                        heads, ind2 = loops.for_loops(inner_sizes[:-1], inames[:-1], ind)
                else:
                    heads, ind2 = loops.for_loops(inner_sizes[:-1], inames[:-1], ind)
                lines += heads
                lines.append(_simd(k, ""))
                one = split and len(inner_sizes) == 1
                lines.append(f"{ind2}for (int64_t {inames[-1]} = {'lo' if one else 0}; {inames[-1]} < "
                             f"{'hi' if one else inner_sizes[-1]}; {inames[-1]}++) {{")
                regmap = dict(self._regmap)
                trees = {}
                for v in self.full:
                    tree = self.trees.build(v)
                    if staged and v in self.stage:
                        tree = _substitute(tree, self.stage[v], Reg(f"staged_{v}"))
                        regmap[f"staged_{v}"] = self._full_addr(v, order, dims, index)
                    trees[v] = tree
                em = Emitter(index, ind2 + "    ", regs=regmap, prefix="f")
                vals = [(v, em.value(perm(trees[v]))) for v in self.full]
                lines += em.lines
                for v, val in vals:
                    lines.append(f"{ind2}    {self._full_addr(v, order, dims, index)} = {val};")
                self.helpers |= em.helpers
                lines.append(ind2 + "}")
                lines += loops.close(len(inner_sizes) - 1, ind2)
                if split and len(inner_sizes) == 1:
                    lines.append(ind + "}")
            if self.stage:
                lines.append("#endif")
        lines += loops.close(len(outer_sizes), ind)
        self.helpers |= rowem.helpers
        return "\n".join(lines)

    @staticmethod
    def _chunks(n: int) -> int:
        return (n + 4095) // 4096

    def _inner_heads(self, sizes, names, ind, split):
        """Headers of the reduced loops but the innermost; the outermost one takes this
        thread's share [lo, hi) when the row is split."""
        if not split or len(sizes) == 1:
            return loops.for_loops(sizes[:-1], names[:-1], ind)
        heads = [f"{ind}for (int64_t {names[0]} = lo; {names[0]} < hi; {names[0]}++) {{"]
        more, ind2 = loops.for_loops(sizes[1:-1], names[1:-1], ind + "    ")
        return heads + more, ind2

    def _split_open(self, p, accs, n0, ind) -> list:
        k = self.ctx.knob
        out = [f"{ind}float part{p}[{k('THREADS')}][{max(1, len(accs))}];",
               f"{ind}int nt{p} = 1;",
               f"#pragma omp parallel num_threads({k('THREADS')})",
               f"{ind}{{",
               f"{ind}    const int t = omp_get_thread_num(), nt = omp_get_num_threads();",
               f"{ind}    if (t == 0) nt{p} = nt;",
               f"{ind}    const int64_t lo = {n0} * t / nt, hi = {n0} * (t + 1) / nt;"]
        out += [f"{ind}    float acc_{name} = {INIT[op]};" for name, op, _ in accs]
        return out

    def _split_close(self, p, accs, ind) -> list:
        out = [f"{ind}    part{p}[t][{a}] = acc_{name};" for a, (name, _, _) in enumerate(accs)]
        out.append(f"{ind}}}")
        out.append(f"{ind}for (int t = 0; t < nt{p}; t++) {{")
        for a, (name, op, _) in enumerate(accs):
            out.append(f"{ind}    " + _accumulate(name, op, f"part{p}[t][{a}]"))
        out.append(f"{ind}}}")
        return out

    def _full_addr(self, v, order, dims, index) -> str:
        off, st = Affine.identity(self.dom).offset(self.dom)
        return f"{self.ctx.names[v]}[{_addr(off, loops.merged_strides(tuple(st[d] for d in order), dims), index)}]"

    # ------------------------------------------------------------------ shared pieces

    def _pass_accs(self, p):
        """(accumulator name, op, tree) of pass ``p``; a var's second stage reads its mean."""
        out = []
        for r in self.reductions:
            op = self.ctx.plan.nodes[r].op
            if self.start[r] == p:
                out.append((r if op != "var" else f"{r}_m", "sum" if op == "var" else op, self.red_tree[r]))
            elif op == "var" and self.start[r] + 1 == p:
                from kernels.codegen.expr import Apply
                dev = Apply("sub", (self.red_tree[r], Reg(f"{r}_mean")), ())
                out.append((r, "var", Apply("mul", (dev, dev), ())))
        return out

    def _finish_pass(self, p, accs, lines, ind, column=False):
        n = math.prod(self.dom[d] for d in self.red)
        cols = self.ctx.knob("COLS") if column else None
        if not hasattr(self, "_regmap"):
            self._regmap = {}
        for name, op, _ in accs:
            node = self.ctx.plan.nodes.get(name)
            if name.endswith("_m") and name[:-2] in self.reductions and self.ctx.plan.nodes[name[:-2]].op == "var":
                base = name[:-2]
                expr = f"acc_{name}{{j}} * {1.0 / n!r}f"
                target = f"{base}_mean"
            else:
                base = name
                target = name
                if op == "mean":
                    expr = f"acc_{name}{{j}} * {1.0 / n!r}f"
                elif op == "var":
                    corr = node.attrs.get("correction", 1.0)
                    expr = f"acc_{name}{{j}} / {float(n - corr)!r}f"
                else:
                    expr = f"acc_{name}{{j}}"
            if column:
                lines.append(f"{ind}float red_{target}[{cols}];")
                lines.append(f"{ind}for (int64_t j = 0; j < vn; j++) red_{target}[j] = {expr.format(j='[j]')};")
            else:
                lines.append(f"{ind}const float red_{target} = {expr.format(j='')};")
            self._regmap[target] = f"red_{target}"

    def _rows_ready(self, p, rowem, perm, lines):
        if not hasattr(self, "_regmap"):
            self._regmap = {}
        ready = [r for r in self.rows if self.done_after[r] == p]
        for r in ready:
            rowem.regs = dict(self._regmap)
            rowem.indent = lines[-1][: len(lines[-1]) - len(lines[-1].lstrip())] if lines else ""
            rowem.indent = self._row_indent(lines)
            val = rowem.value(perm(self.row_tree[r]))
            lines += rowem.lines
            rowem.lines = []
            lines.append(f"{rowem.indent}const float row_{r} = {val};")
            self._regmap[r] = f"row_{r}"

    def _row_indent(self, lines):
        depth = 0
        for ln in lines:
            s = ln.strip()
            if s.startswith("for (") and s.endswith("{"):
                depth += 1
            elif s == "}":
                depth -= 1
        return "    " * depth

    def _store_rows(self, rowem, perm, lines, ind):
        for v in self.g.outputs:
            if v in self.rows or v in self.reductions:
                m = row_map(self.dom, self.red, self.values[v].shape)
                off, st = m.offset(self.values[v].shape)
                from kernels.codegen.expr import Load
                ld = perm(Load(self.ctx.names[v], off, st))
                lines.append(f"{ind}{self.ctx.names[v]}[{_addr(ld.offset, ld.strides, rowem.index)}] = "
                             f"{self._regmap[v]};")




FAMILY = ReductionFamily()
