"""One generated C source for a whole graph: group kernels, a driver, an arena, a design space.

:func:`generate` normalises the graph's outputs, partitions it (:mod:`partition`), asks each
group's family (:mod:`registry`) for its code — both forms where a ``FUSE_<n>`` bit chooses
between a fused epilogue and a separate group — plans the intermediates in one arena by
liveness (two buffers share memory only if no group has both live), and writes

    /* header: the graph, the groups, the knobs */
    #include ...
    <math helpers used>
    static void g0(...) { ... }          one function per group (per FUSE form, under #if)
    void kernel(<inputs>, <params>, <outputs>) { arena once; g0(...); g1(...); ... }

The entry's ABI is the graph's inputs, then its params, as ``const float *``, then one
``float *`` per output (``out0``...). Dims are baked in as constants. The knobs are the
groups' params (``G<id>_<NAME>``) and the fusion bits; every default is a legal point.
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field

from kernels.codegen import cmath, dynamic, registry, team
from kernels.codegen.expr import NeedsBuffer
from kernels.codegen.family import Ctx
from kernels.codegen.gemm_form import host_gemm_form, rule as gemm_rule
from kernels.codegen.streaming import host_rows_per_pass
from kernels.codegen.partition import Group, Partition, Plan, partition
from kernels.graph import opset
from kernels.graph.ir import Graph, Node
from kernels.spec import Arg, DesignSpace, Param

ALIGN_FLOATS = 16


class CodegenError(RuntimeError):
    """The generator cannot produce code for this graph (a bug or an unhandled layout)."""


@dataclass
class Program:
    source: str
    space: DesignSpace
    args: tuple[Arg, ...]
    out_names: tuple[str, ...]
    groups: list          # summaries (JSON): id, family, members, outputs, knobs, fuse, signature
    arena_floats: int
    flops: float
    bytes: float
    graph: Graph = field(repr=False, default=None)
    unit: "Unit" = field(repr=False, default=None)
    helpers: set = field(repr=False, default_factory=set)
    params: list = field(repr=False, default_factory=list)
    constraints: list = field(repr=False, default_factory=list)
    # the intermediates' arena (plan_arena's JSON; for several shapes: "shapes", one each);
    # the families' packing scratch comes after it and depends on the knobs
    arena: dict = field(default_factory=dict)
    # the graph the groups' members name: normalise(graph) plus the copies the generator
    # inserted where a view could not be followed (the first shape's, for several)
    planned: Graph = field(repr=False, default=None)


def generate_multi(graphs: list, dims: list, dim_names: list, *, cores: int | None = None,
                   vregs: int | None = None, gemm_form: int | None = None, gemv_rows: int | None = None, title: str = "",
                   param_digests: list | None = None) -> Program:
    """One source for the same problem captured at several shapes: a unit per shape (dims
    baked in), ``kernel`` taking the dims as trailing ``int64_t`` args to pick the unit.
    The knobs are shared: they must mean the same thing at every shape (the same partition),
    else the shape is refused (``CodegenError``). Three or more shapes that differ in one dim
    and whose units differ only in integers affine in it share one unit reading that dim at
    run time, dispatched over the range they span (:mod:`kernels.codegen.dynamic`; members
    must have the same ``param_digests``, where given)."""
    progs = [generate(g, cores=cores, vregs=vregs, gemm_form=gemm_form, gemv_rows=gemv_rows, prefix=f"s{k}_")
             for k, g in enumerate(graphs)]
    first = progs[0]
    params, constraints = list(first.params), list(first.constraints)
    for k, p in enumerate(progs[1:], 1):
        if [(x["id"], x["family"], x["form"]) for x in p.groups] != \
                [(x["id"], x["family"], x["form"]) for x in first.groups]:
            raise CodegenError(f"shape {k} partitions differently from the first: its knobs would not be shared")
        # a group's knob that only some shapes have (a pointwise BLOCK where a dim is 1 at one
        # shape and not another) is the same group's knob: the shapes without it ignore it
        names = {q.name for q in params}
        params += [q for q in p.params if q.name not in names]
        constraints = _unique(constraints + p.constraints)
    args = first.args + tuple(Arg(n, "dim") for n in dim_names)
    texts = [re.sub(rf"\bs{k}_", dynamic.PREFIX_MARK, p.unit.text) for k, p in enumerate(progs)]
    shared = dynamic.find(texts, dims, dim_names, param_digests) if len(progs) >= 3 else []
    members = {k for sh in shared for k in sh.members}
    units = [p.unit for k, p in enumerate(progs) if k not in members]
    dispatch = [" && ".join(f"{n} == {v}" for n, v in zip(dim_names, d)) or "1"
                for k, d in enumerate(dims) if k not in members]
    for j, sh in enumerate(shared):
        prefix, rep = f"sd{j}_", progs[max(sh.members, key=lambda k: dims[k][dim_names.index(sh.dim)])]
        var = f"{prefix}{sh.dim}"
        comment = [re.sub(r"\bs\d+_", prefix, c) for c in rep.unit.comment]
        comment[0] += f" (shared by {sh.dim} = {sh.lo}..{sh.hi}: {len(sh.fits)} sizes read {sh.dim} at run time)"
        units.append(Unit(comment, f"static int64_t {var};   /* {sh.dim} of the current call */\n"
                          + dynamic.render(sh, prefix, var), rep.unit.arena_values,
                          f"({prefix}ARENA_VALUES + {prefix}ARENA_SCRATCH)", prefix, sets=((var, sh.dim),)))
        fixed = [f"{n} == {v}" for n, v in zip(dim_names, dims[sh.members[0]]) if n != sh.dim]
        dispatch.append(" && ".join(fixed + [f"{sh.dim} >= {sh.lo}", f"{sh.dim} <= {sh.hi}"]))
    if len(progs) == 1:
        dispatch = [""]
    helpers = set().union(*(p.helpers for p in progs))
    source = render(units, dispatch, params, helpers, args, title)
    space = DesignSpace(tuple(params), tuple(constraints))
    arena = {"floats": max(p.arena_floats for p in progs), "bytes": 4 * max(p.arena_floats for p in progs),
             "floats_no_reuse": max(p.arena["floats_no_reuse"] for p in progs),
             "bytes_no_reuse": 4 * max(p.arena["floats_no_reuse"] for p in progs),
             "shapes": [{"dims": dict(zip(dim_names, d)), **p.arena} for p, d in zip(progs, dims)],
             "shared": [sh.to_json() for sh in shared]}
    return Program(source, space, args, first.out_names, first.groups, max(p.arena_floats for p in progs),
                   first.flops, first.bytes, first.graph, helpers=helpers, params=params,
                   constraints=constraints, arena=arena, planned=first.planned)


def output_names(graph: Graph) -> tuple[str, ...]:
    return tuple(f"out{i}" for i in range(len(graph.outputs)))


def normalise(graph: Graph) -> tuple[Graph, dict]:
    """Outputs that are views become their own nodes: a reshape-only view of a computed node
    is that node written straight into the output buffer; any other view gets a copy."""
    values = graph.values()
    nodes = list(graph.nodes)
    outs = list(graph.outputs)
    alias = {}
    taken = set(outs)
    for k, o in enumerate(outs):
        v = values[o]
        if not (isinstance(v, Node) and opset.family(v.op) == "view"):
            continue
        base, chain_ok = o, True
        while isinstance(values.get(base), Node) and opset.family(values[base].op) == "view":
            chain_ok &= values[base].op == "reshape"
            base = values[base].args[0]
        if chain_ok and isinstance(values.get(base), Node) and base not in taken:
            outs[k] = base
            alias[base] = o
            taken.add(base)
        else:
            name = f"{o}_copy"
            nodes.append(Node(name, "identity", (o,), v.shape, {}, "f32", v.origin))
            outs[k] = name
    live = set(outs)
    for n in reversed(nodes):   # nothing is generated for nodes no output needs
        if n.name in live:
            live.update(n.refs())
    nodes = [n for n in nodes if n.name in live]
    return Graph(graph.inputs, graph.params, tuple(nodes), tuple(outs)), alias


def generate(graph: Graph, *, cores: int | None = None, vregs: int | None = None, gemm_form: int | None = None,
             gemv_rows: int | None = None, title: str = "", prefix: str = "") -> Program:
    """The program for ``graph``. Its knobs' defaults are for this host unless told: ``cores``
    (the threads), ``gemm_form`` (the form a deep Linear starts in, matmul's ALGO 1 or 3: the
    host's faster, :mod:`kernels.codegen.gemm_form`; or, for another host, the rule ``vregs``
    gives: dot tiles with 32 vector registers, else packed) and ``gemv_rows`` (the weight rows
    a matrix-vector pass sums: the host's fastest, :mod:`kernels.codegen.streaming`)."""
    cores = cores or os.cpu_count() or 1
    if gemm_form is None:
        gemm_form = host_gemm_form() if vregs is None else gemm_rule(vregs)
    gemv_rows = gemv_rows or host_rows_per_pass()
    g2, _ = normalise(graph)
    keep_out: dict = {}
    force: set = set()
    for _ in range(32):
        part = partition(g2, keep_out=keep_out, force=force)
        try:
            return _assemble(graph, g2, part, (cores, gemm_form, gemv_rows), title, prefix)
        except NeedsBuffer as exc:
            node = Plan(g2).nodes.get(exc.value)
            if node is not None and opset.family(node.op) in ("pointwise", "view") and node.dtype == "f32":
                if opset.family(node.op) == "view":
                    # a view cannot be stored: a copy of it can, and the failing read reads that
                    g2 = _copy_before(g2, exc.value, getattr(exc, "via", None))
                    force.add(f"{exc.value}_copy")
                    continue
                if exc.value not in force:
                    force.add(exc.value)   # computed in a group of its own, read from memory
                    continue
            gkey, culprits = _culprits(part, exc)
            if not culprits or culprits <= keep_out.get(gkey, set()):
                raise CodegenError(f"cannot reach {exc.value}: {exc.why}") from None
            keep_out.setdefault(gkey, set()).update(culprits)
    raise CodegenError("the partition did not settle")


def _copy_before(graph: Graph, view: str, via: str | None) -> Graph:
    """``graph`` with ``identity(view)`` inserted, and ``via`` (the view that could not be
    followed; every consumer of ``view`` when unknown) reading the copy instead."""
    values = graph.values()
    v = values[view]
    copy = Node(f"{view}_copy", "identity", (view,), v.shape, {}, "f32", v.origin)
    nodes = []
    for n in graph.nodes:
        if n.name != view and view in n.refs() and (via is None or n.name == via):
            n = Node(n.name, n.op, tuple(copy.name if a == view else a for a in n.args), n.shape, n.attrs,
                     n.dtype, n.origin)
        nodes.append(n)
        if n.name == view:
            nodes.append(copy)
    return Graph(graph.inputs, graph.params, tuple(nodes), graph.outputs)


def _culprits(part: Partition, exc: NeedsBuffer):
    """The members of the failing group that read ``exc.value`` through the failing view."""
    plan = Plan(part.graph)
    gid = getattr(exc, "group", None)
    g = next((x for x in part.all_groups() if x.id == gid), None)
    if g is None:
        return None, set()
    gkey = (g.family, g.anchors[0] if g.anchors else g.members[0])
    members = set(g.members)
    readers = set()
    for m in g.members:
        n = plan.nodes[m]
        if any(plan.root(a) == exc.value or a == exc.value for a in n.refs()) and m != exc.value:
            readers.add(m)
    if exc.value not in members:
        return gkey, set()
    # readers inside the group that are not anchors leave; if the value is not an anchor it leaves
    out = {r for r in readers if r not in g.anchors}
    if not out and exc.value not in g.anchors:
        out = {exc.value}
    return gkey, out


def _assemble(orig: Graph, graph: Graph, part: Partition, host: tuple, title: str, prefix: str) -> Program:
    cores, gemm_form, gemv_rows = host
    plan = Plan(graph)
    out_names = output_names(orig)
    # inside the source every buffer has a prefixed name, so that no user-chosen input name
    # can collide with a generated local (the entry's own parameters keep the ABI names)
    names = {t.name: f"in_{t.name}" for t in (*graph.inputs, *graph.params)}
    names["__scratch__"] = "scratch"   # the families' packing buffers, after the values
    for k, o in enumerate(graph.outputs):
        names[o] = out_names[k]
    arena_values = []
    for g in part.all_groups():
        for m in g.outputs:
            if m not in names:
                names[m] = f"b_{m}"
                arena_values.append(m)
        if g.family == "matmul" and g.fuse and g.anchors[0] not in names:
            names[g.anchors[0]] = f"b_{g.anchors[0]}"
            arena_values.append(g.anchors[0])
    # emit every group (both forms where a FUSE bit decides)
    emitted = []   # (group, form, code, uses)
    for g in part.groups:
        forms = ([(g, "fused"), (g, "unfused")] + [(s, "split") for s in _splits(g)]) if g.fuse else [(g, None)]
        for grp, form in forms:
            ctx = Ctx(part, plan, names, cores, grp, gemm_form, gemv_rows)
            ctx.form, ctx.prefix = form, prefix
            fam = registry.get(grp.family)
            try:
                code = fam.emit(grp, ctx)
            except NeedsBuffer as exc:
                exc.group = grp.id if grp.split_of is None else grp.split_of
                raise
            emitted.append((grp, form, code, dict(ctx.uses), g))
    offsets, arena_floats, arena = _plan_arena(part, emitted, arena_values, graph)
    offsets["__scratch__"] = "ARENA_VALUES"
    scratch = [c.scratch for _, _, c, _, _ in emitted if c.scratch not in ("0", "")]
    params, constraints, helpers = [], [], set()
    for g in part.groups:
        if g.fuse and g.feeds:
            cats = ", ".join(f.members[0] for f in g.feeds)
            params.append(Param(g.fuse, "bool", default=1,
                                help=f"group {g.id}: 1 reads the inputs of the concatenation ({cats}) where they "
                                     f"lie; 0 copies them into it first, in a cat group of its own"))
        elif g.fuse:
            params.append(Param(g.fuse, "bool", default=1,
                                help=f"group {g.id}: 1 fuses the epilogue ({', '.join(g.epilogue)}) into the "
                                     f"matmul's tile stores; 0 runs it as its own pass"))
    seen = set()
    for grp, form, code, _, _ in emitted:
        for p in code.params:
            if p.name not in seen:
                params.append(p)
                seen.add(p.name)
        constraints += code.constraints
        helpers |= code.helpers
    constraints = _unique(constraints)   # a FUSE bit's fused and unfused forms emit the same matmul constraints
    args = tuple([Arg(t.name, "in") for t in (*orig.inputs, *orig.params)] + [Arg(o, "out") for o in out_names])
    unit = _unit(orig, part, emitted, names, offsets, arena_floats, scratch, args, prefix)
    if f"{prefix}team_threads" in unit.text:
        params.append(Param("TEAM", "bool", default=1,
                            help="1 runs every group inside one parallel region, spin barriers between "
                                 "them (kernels/codegen/team.py); 0: each group opens its own regions"))
    source = render([unit], [""], params, helpers, args, title)
    summaries = _summaries(part, emitted)
    fused_costs = [c for grp, form, c, _, _ in emitted if form in (None, "fused")]
    return Program(source, DesignSpace(tuple(params), tuple(constraints)), args, out_names, summaries,
                   arena_floats, sum(c.flops for c in fused_costs), sum(c.bytes for c in fused_costs), orig,
                   unit=unit, helpers=helpers, params=params, constraints=constraints, arena=arena,
                   planned=graph)


def _splits(g) -> list:
    """The groups that run in ``g``'s place only when its FUSE bit is 0, in emission order:
    its feeds (cat groups an attention otherwise reads in place), then its split (a matmul's
    epilogue as its own pass)."""
    return [*g.feeds, *([g.split] if g.split is not None else [])]


def _unique(constraints: list) -> list:
    """``constraints`` without repeats (same expression), in order (a Constraint compares by identity)."""
    seen, out = set(), []
    for c in constraints:
        if c.expr not in seen:
            seen.add(c.expr)
            out.append(c)
    return out


def _plan_arena(part: Partition, emitted, arena_values, graph) -> tuple[dict, int, dict]:
    """Offsets (in floats) of the intermediates: live from the first group that writes them
    to the last that reads them, in either FUSE form (both forms' uses count, so the plan
    holds whichever the knobs pick); planned by :func:`plan_arena`."""
    values = graph.values()
    position = {}
    for pos, g in enumerate(part.groups):
        for s in (g, *_splits(g)):
            position[s.id] = pos
    live = {v: [math.inf, -math.inf] for v in arena_values}
    for grp, _, _, uses, owner in emitted:
        pos = position[grp.id]
        for v, mode in uses.items():
            if v in live:
                live[v][0] = min(live[v][0], pos)
                live[v][1] = max(live[v][1], pos)
    buffers = []
    for v in arena_values:
        s, e = live[v]
        if s == math.inf:
            s, e = 0, len(part.groups)
        buffers.append(Buffer(v, int(s), int(e), _round(math.prod(values[v].shape))))
    plan = plan_arena(buffers)
    return plan.offsets, plan.floats, plan.to_json()


@dataclass(frozen=True)
class Buffer:
    """An intermediate: live from schedule step ``first`` to ``last`` (inclusive), ``size`` floats."""

    name: str
    first: int
    last: int
    size: int


@dataclass
class ArenaPlan:
    offsets: dict            # buffer name -> offset in floats
    floats: int              # the arena's size with reuse
    floats_no_reuse: int     # the sum of every buffer's size (one buffer each)
    buffers: list

    def to_json(self) -> dict:
        return {"floats": self.floats, "bytes": 4 * self.floats, "floats_no_reuse": self.floats_no_reuse,
                "bytes_no_reuse": 4 * self.floats_no_reuse,
                "reuse": round(self.floats_no_reuse / self.floats, 3) if self.floats else None,
                "buffers": [{"name": b.name, "first": b.first, "last": b.last, "size": b.size,
                             "offset": self.offsets[b.name]} for b in self.buffers]}


def plan_arena(buffers: list) -> ArenaPlan:
    """Place ``buffers`` (:class:`Buffer`) in one arena: two share memory only if their
    lifetimes do not overlap (a buffer written at step s and read until step e is live on
    [s, e]; two that meet at one step are both live there). First fit over the buffers
    already placed whose lifetimes overlap, largest first (ties by first use, then name: the
    plan does not depend on the order given)."""
    order = sorted(buffers, key=lambda b: (-b.size, b.first, b.name))
    placed = []   # (first, last, offset, size)
    offsets = {}
    for b in order:
        busy = sorted((o, o + sz) for (ps, pe, o, sz) in placed if not (pe < b.first or ps > b.last))
        off = 0
        for lo, hi in busy:
            if off + b.size <= lo:
                break
            off = max(off, hi)
        offsets[b.name] = off
        placed.append((b.first, b.last, off, b.size))
    total = max((o + sz for _, _, o, sz in placed), default=0)
    return ArenaPlan(offsets, total, sum(b.size for b in buffers), list(buffers))


def _round(n: int) -> int:
    return (n + ALIGN_FLOATS - 1) // ALIGN_FLOATS * ALIGN_FLOATS


def _signature(grp: Group, uses: dict, names: dict, graph: Graph) -> tuple[str, str]:
    params, call = [], []
    for v, mode in uses.items():
        c = names[v]
        params.append(f"{'float' if mode == 'w' else 'const float'} *restrict {c}")
        call.append(v)
    return ", ".join(params) or "void", call


@dataclass
class Unit:
    """One shape's share of a source: its group functions and a ``run`` calling them."""

    comment: list
    text: str                 # static functions, then ``static void <prefix>run(...)``
    arena_values: int
    scratch: str
    prefix: str = ""
    sets: tuple = ()          # (variable, dim): what a shared unit reads its dim from


def _unit(orig, part, emitted, names, offsets, arena_floats, scratch, args, prefix) -> Unit:
    comment = [f" * {prefix or 'graph'}: {len(orig.nodes)} nodes; {len(part.groups)} fusion groups:"]
    for g in part.groups:
        comment.append(f" *   g{g.id} {g.family:9s} {list(g.domain)}: {', '.join(g.members[:5])}"
                       + (" ..." if len(g.members) > 5 else "") + (f"  [{g.fuse}]" if g.fuse else ""))
    lines, forms = [], {}
    threads = list(dict.fromkeys(p.name for _, _, code, _, _ in emitted for p in code.params
                                 if p.name.endswith("THREADS")))
    teamed = bool(threads) and len(part.groups) > 1
    for grp, form, code, uses, owner in emitted:
        sig, call = _signature(grp, uses, names, orig)
        fn = f"{prefix}g{grp.id}"
        text = [code.functions] if code.functions else []
        plain = [f"static void {fn}({sig}) {{"] + ["    " + ln if ln and not ln.startswith("#") else ln
                                                    for ln in code.body.splitlines()] + ["}"]
        args_c = [names[v] if v not in offsets else f"arena + {offsets[v]}".replace("ARENA_VALUES", f"{prefix}ARENA_VALUES")
                  for v in call]
        invoke = f"{fn}({', '.join(args_c)});"
        body, why = _team_body(code.body) if teamed else (None, None)
        if body is not None:
            # one of the two forms is compiled (TEAM): the source doubles, the compile does not
            text += ["#if TEAM", f"static void {fn}_team({sig}) {{"]
            text += ["    " + ln if ln and not ln.startswith("#") else ln for ln in body.splitlines()]
            text += ["}", "#else"] + plain + ["#endif"]
            together = f"{fn}_team({', '.join(args_c)});"
        else:   # the whole group on thread 0, the team waiting (unused without a team)
            text += plain
            together = f"if (omp_get_thread_num() == 0) {invoke}   /* not in team form: {why} */\n            i21_sync();"
        forms.setdefault(owner.id, []).append((form, "\n".join(text), invoke, together))
    calls, team_calls = [], []
    for g in part.groups:
        if g.fuse:
            # FUSE 0 runs the feeds (cat groups), the group, then its split (a matmul's epilogue)
            fused = next(rest for f, *rest in forms[g.id] if f == "fused")
            unfused = next(rest for f, *rest in forms[g.id] if f == "unfused")
            splits = [rest for f, *rest in forms[g.id] if f == "split"]
            other = splits[:len(g.feeds)] + [unfused] + splits[len(g.feeds):]
            lines += [f"#if {g.fuse}", fused[0], "#else", *(x[0] for x in other), "#endif", ""]
            calls += [f"#if {g.fuse}", "    " + fused[1], "#else", *("    " + x[1] for x in other), "#endif"]
            team_calls += [f"#if {g.fuse}", "        " + fused[2], "#else", *("        " + x[2] for x in other),
                           "#endif"]
        else:
            lines += [forms[g.id][0][1], ""]
            calls.append("    " + forms[g.id][0][2])
            team_calls.append("        " + forms[g.id][0][3])
    lines.append(f"#define {prefix}ARENA_VALUES {arena_floats}")
    lines += _max_function(f"{prefix}arena_scratch", scratch)
    lines.append(f"#define {prefix}ARENA_SCRATCH ({prefix}arena_scratch())")
    internal = {t.name: f"in_{t.name}" for t in (*orig.inputs, *orig.params)}
    sig = ", ".join(_decl(Arg(internal.get(a.name, a.name), a.kind)) for a in args if a.kind != "dim")
    if teamed:
        # the team: the fewest threads any region asks for beyond one (a region may size
        # per-thread scratch by its count; it runs correctly on fewer, never on more)
        lines += [f"static int {prefix}team_threads(void) {{", "    int64_t m = 0, v;"]
        lines += [f"    v = (int64_t)({t}); if (v > 1 && (m == 0 || v < m)) m = v;" for t in threads]
        lines += ["    (void)v;", "    return m > 1 ? (int)m : 1;", "}"]
    lines.append(f"static void {prefix}run({sig}, float *restrict arena) {{")
    lines.append("    (void)arena;")
    if teamed:
        # the team form (kernels/codegen/team.py): one parallel region for every group
        lines += ["#if TEAM", "    i21_sync_begin();", f"    #pragma omp parallel num_threads({prefix}team_threads())",
                  "    {"]
        lines += team_calls
        lines += ["    }", "#else"] + calls + ["#endif"]
    else:
        lines += calls
    lines.append("}")
    return Unit(comment, "\n".join(lines), arena_floats, f"({prefix}ARENA_VALUES + {prefix}ARENA_SCRATCH)", prefix)


def _team_body(body: str) -> tuple:
    """(the group's team-function body, None), or (None, why it has none)."""
    try:
        return team.team_body(body), None
    except team.NotTeam as exc:
        return None, str(exc)


def _max_function(name: str, exprs: list) -> list:
    """A function returning the largest of ``exprs`` (knob-dependent sizes, evaluated at run
    time). One line per expression: a nested ``a > b ? a : b`` doubles with every term (a
    decoder's 30 matmul groups made a 67 MB source of it)."""
    lines = [f"static int64_t {name}(void) {{", "    int64_t m = 0, v;"]
    for x in dict.fromkeys(exprs):
        lines.append(f"    v = (int64_t)({x}); if (v > m) m = v;")
    lines += ["    (void)v;", "    return m;", "}"]
    return lines


def _decl(a: Arg) -> str:
    return a.c_decl().replace("*", "*restrict ") if a.kind in ("in", "out") else a.c_decl()


def render(units: list, dispatch: list, params, helpers, args, title: str = "") -> str:
    """The whole source: header, knob defaults, helpers, each unit, and ``kernel``, which
    runs the unit whose dims match (``dispatch[k]``: the C condition for unit k; a call at
    dims no unit was generated for writes nothing)."""
    lines = ["/* Generated by the INT21 Kernel Factory (kernels/codegen) from an imported graph."]
    if title:
        lines.append(f" * Problem: {title}")
    for u in units:
        lines += u.comment
    lines.append(" * Knobs are macros (the harness defines them); the defaults below make it self-contained. */")
    lines += ["#include <stdint.h>", "#include <stdlib.h>", "#include <string.h>", "#include <math.h>",
              "#include <omp.h>", ""]
    for p in params:
        default = p.default_value()
        default = int(default) if isinstance(default, bool) else default
        if isinstance(default, int):
            lines += [f"#ifndef {p.name}", f"#define {p.name} {default}", "#endif"]
    lines += ["", cmath.library(helpers)]
    if any("i21_sync()" in u.text for u in units):
        lines.append(team.SYNC)
    for u in units:
        lines += [u.text, ""]
    lines += _max_function("i21_arena_floats", [u.scratch for u in units])
    lines.append("#define ARENA_FLOATS (i21_arena_floats())")
    lines.append("")
    lines.append(f"void kernel({', '.join(_decl(a) for a in args)}) {{")
    lines.append("    /* one arena for every intermediate and scratch buffer, allocated on the first call")
    lines.append("     * and kept: later calls do not pay its page faults again (nothing is read from it")
    lines.append("     * before it is written in the same call) */")
    lines.append("    static float *arena = 0;")
    lines.append("    if (ARENA_FLOATS > 0 && !arena) {")
    lines.append("        arena = aligned_alloc(64, ((size_t)ARENA_FLOATS * sizeof(float) + 63) / 64 * 64);")
    lines.append("        if (!arena) return;")
    lines.append("    }")
    names = ", ".join(a.name for a in args if a.kind != "dim")
    for k, (u, cond) in enumerate(zip(units, dispatch)):
        prefix = u.prefix
        head = "if" if k == 0 else "} else if"
        if cond:
            lines.append(f"    {head} ({cond}) {{")
            lines += [f"        {var} = {dim};" for var, dim in u.sets]
            lines.append(f"        {prefix}run({names}, arena);")
        else:
            lines += [f"    {var} = {dim};" for var, dim in u.sets]
            lines.append(f"    {prefix}run({names}, arena);")
    if any(dispatch):
        lines.append("    }")
    lines += [f"    (void){a.name};" for a in args if a.kind == "dim"]
    lines.append("}")
    return "\n".join(lines) + "\n"


def _summaries(part: Partition, emitted) -> list:
    out = []
    for grp, form, code, uses, owner in emitted:
        out.append({"id": grp.id, "family": grp.family, "form": form, "members": list(grp.members),
                    "outputs": list(grp.outputs), "domain": list(grp.domain),
                    "knobs": [p.name for p in code.params], "fuse": owner.fuse,
                    "reads": [v for v, m in uses.items() if m == "r"], "signature": code.summary,
                    "flops": code.flops, "bytes": code.bytes})
    return out
