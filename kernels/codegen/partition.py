"""Splitting an IR graph into fusion groups.

Every non-view node ends up computed by exactly one group (bool masks excepted: they are
recomputed wherever they are used); views are never computed, only followed. Families:

- ``matmul``     one matmul; its *epilogue* — pointwise nodes on its output's shape fed by it —
                 is fused into the tile stores, or split off as a pointwise group, by one
                 ``FUSE_<n>`` param (``Group.fuse``; the split form is ``Group.split``);
- ``attention``  one attention node; a concatenation along the key axis that only it reads
                 (a decode step's cache and new rows) is read in place, segment by segment, or
                 materialised by its own cat group first, by a ``FUSE_<n>`` bit (the cat
                 groups are ``Group.feeds``);
- ``reduction``  the reductions of one cluster (same input shape and dims, linked by
                 pointwise ops: softmax's max and sum, a norm's mean and variance) with their
                 prologue (inlined into the passes), per-row values and full-size epilogue;
- ``cat``        one concatenation, its inputs' pointwise producers inlined per segment;
- ``pointwise``  any DAG of elementwise ops over one output shape (several outputs allowed).

Two passes. Forward (topological): a pointwise node joins the group of an input when it fits
that group's domain (an epilogue of a matmul, a row or full-size node of a reduction) and
no cycle between groups follows. Backward: each node still homeless is inlined into its
consumers' group when there is exactly one, else it is materialised in a pointwise group.
A value is *materialised* (written to a buffer) when it is an output of the graph or read
by another group. Families may ask for more buffers while building their trees
(:class:`~kernels.codegen.expr.NeedsBuffer`); :func:`partition` then runs again with that
node kept out of the group that could not reach it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from kernels.graph import opset
from kernels.graph.ir import Graph, Node

ANCHORS = {"matmul": "matmul", "attention": "attention", "cat": "cat", "scan": "scan"}


@dataclass
class Group:
    id: int
    family: str
    domain: tuple
    members: list = field(default_factory=list)      # node names computed here, in graph order
    anchors: list = field(default_factory=list)
    outputs: list = field(default_factory=list)      # materialised members
    reduce_dims: tuple = ()
    epilogue: list = field(default_factory=list)     # matmul: the fusible pointwise tail
    fuse: str | None = None                          # the FUSE_<n> param that selects the fused form
    split: "Group | None" = None                     # matmul: the epilogue as its own group (FUSE 0)
    split_of: int | None = None
    feeds: list = field(default_factory=list)       # attention: cat groups run before it when FUSE 0
    order: int = 0

    @property
    def label(self) -> str:
        return f"g{self.id}"


@dataclass
class Partition:
    groups: list                  # in execution order (split groups right after their matmul)
    producer: dict                # materialised value -> group id
    materialised: set
    graph: Graph

    def group(self, gid: int) -> Group:
        return next(g for g in self.all_groups() if g.id == gid)

    def all_groups(self) -> list:
        out = []
        for g in self.groups:
            out.extend(g.feeds)
            out.append(g)
            if g.split is not None:
                out.append(g.split)
        return out


class Plan:
    """The graph's wiring, computed once: non-view roots of values, consumers through views."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.values = graph.values()
        self.nodes = {n.name: n for n in graph.nodes}
        self.index = {n.name: i for i, n in enumerate(graph.nodes)}
        direct: dict[str, list[str]] = {name: [] for name in self.values}
        for n in graph.nodes:
            for r in dict.fromkeys(n.refs()):
                direct[r].append(n.name)
        self.direct = direct
        self.outputs = set(graph.outputs)

    def is_view(self, name: str) -> bool:
        n = self.nodes.get(name)
        return n is not None and opset.family(n.op) == "view"

    def root(self, name: str) -> str:
        """The value a view chain reads (itself if not a view)."""
        while self.is_view(name):
            name = self.nodes[name].args[0]
        return name

    def consumers(self, name: str) -> list[str]:
        """Nodes that compute with ``name``, looking through views and bool masks (which are
        recomputed wherever they are used)."""
        out = []
        for c in self.direct[name]:
            if self.is_view(c) or self.kind(c) == "bool":
                out.extend(self.consumers(c))
            else:
                out.append(c)
        return list(dict.fromkeys(out))

    def viewed_outputs(self, name: str) -> bool:
        """A graph output is a view of ``name``."""
        return any(self.is_view(c) and (c in self.outputs or self.viewed_outputs(c)) for c in self.direct[name])

    def kind(self, name: str) -> str:
        n = self.nodes.get(name)
        if n is None:
            return "leaf"
        fam = opset.family(n.op)
        return "bool" if fam == "pointwise" and n.dtype == "bool" else fam


def row_shape(domain, dims) -> tuple:
    return tuple(1 if d in dims else s for d, s in enumerate(domain))


def squeezed(shape) -> tuple:
    return tuple(s for s in shape if s != 1)


def partition(graph: Graph, *, keep_out: dict | None = None, force: set | None = None) -> Partition:
    """The maximal fusion partition. ``keep_out[gid_key]`` lists nodes that may not join
    (or be inlined into) a group, keyed by ``(family, first anchor)`` — what a family's
    failed tree asked for."""
    keep_out = keep_out or {}
    force = force or set()   # pointwise nodes that must be materialised in a group of their own
    plan = Plan(graph)
    clusters = _reduction_clusters(plan)
    groups: list[Group] = []
    home: dict[str, Group] = {}
    deps: dict[int, set] = {}

    def new_group(family, domain, **kw) -> Group:
        g = Group(len(groups), family, tuple(domain), **kw)
        groups.append(g)
        deps[g.id] = set()
        return g

    def key(g: Group):
        return (g.family, g.anchors[0] if g.anchors else g.members[0] if g.members else g.id)

    def producers(name: str) -> set:
        """Groups whose results ``name`` (computed where it is inlined) reads."""
        out = set()
        r = plan.root(name)
        if r in home:
            return {home[r].id}
        n = plan.nodes.get(r)
        if n is not None:   # a bool or a not-yet-placed node: look through it
            for a in n.refs():
                out |= producers(a)
        return out

    def reaches(a: int, b: int) -> bool:
        """Group a depends (transitively) on group b."""
        stack, seen = [a], set()
        while stack:
            x = stack.pop()
            if x == b:
                return True
            if x in seen:
                continue
            seen.add(x)
            stack.extend(deps[x])
        return False

    def can_join(name: str, g: Group) -> bool:
        if name in keep_out.get(key(g), ()):
            return False
        srcs = set()
        for a in plan.nodes[name].refs():
            srcs |= producers(a)
        return all(s == g.id or not reaches(s, g.id) for s in srcs)

    def join(name: str, g: Group) -> None:
        home[name] = g
        g.members.append(name)
        for a in plan.nodes[name].refs():
            deps[g.id] |= producers(a) - {g.id}

    # forward: anchors, reduction clusters, epilogues and per-row values
    for n in graph.nodes:
        kind = plan.kind(n.name)
        if kind in ANCHORS:
            g = new_group(ANCHORS[kind], n.shape, anchors=[n.name], order=plan.index[n.name])
            join(n.name, g)
        elif kind == "reduce":
            cid = clusters[n.name]
            g = next((x for x in groups if x.family == "reduction" and x.anchors and clusters[x.anchors[0]] == cid),
                     None)
            if g is None:
                src = plan.values[n.args[0]].shape
                g = new_group("reduction", src, reduce_dims=tuple(n.attrs["dims"]), order=plan.index[n.name])
            g.anchors.append(n.name)
            join(n.name, g)
        elif kind == "pointwise" and n.name not in force:
            best = None
            for a in n.refs():
                r = plan.root(a)
                g = home.get(r)
                if g is None or not _fits(plan, n, g, r):
                    continue
                if (best is None or g.order > best.order) and can_join(n.name, g):
                    best = g
            if best is not None:
                join(n.name, best)
                if best.family == "matmul":
                    best.epilogue.append(n.name)

    # backward: inline the homeless into their single consumer group, else materialise
    for n in reversed(graph.nodes):
        if plan.kind(n.name) != "pointwise" or n.name in home:
            continue
        cons = plan.consumers(n.name)
        cgroups = {home[c].id: home[c] for c in cons if c in home}
        out = n.name in plan.outputs or plan.viewed_outputs(n.name) or n.name in force
        anchor_operand = any(plan.kind(c) in ("matmul", "attention") for c in cons)
        if not out and not anchor_operand and len(cgroups) == 1:
            g = next(iter(cgroups.values()))
            if can_join(n.name, g) and _inlinable(plan, n, g):
                join(n.name, g)
                if g.family == "matmul":
                    g.epilogue.append(n.name)   # computed with the epilogue, in either FUSE form
                continue
        # materialised: inside a pointwise consumer of the same shape when the other consumers
        # can run after that group
        placed = False
        for g in sorted(cgroups.values(), key=lambda x: x.order) if n.name not in force else ():
            others = [c for c in cgroups if c != g.id]
            if (g.family == "pointwise" and g.domain == n.shape and can_join(n.name, g)
                    and not any(reaches(g.id, o) for o in others)):
                join(n.name, g)
                for o in others:
                    deps[o].add(g.id)
                placed = True
                break
        if placed:
            continue
        g = new_group("pointwise", n.shape, order=plan.index[n.name])
        join(n.name, g)

    for g in groups:
        g.members.sort(key=lambda m: plan.index[m])
        g.epilogue.sort(key=lambda m: plan.index[m])
    materialised = set()
    for g in groups:
        members = set(g.members)
        for m in g.members:
            if m in plan.outputs or plan.viewed_outputs(m) or any(c not in members for c in plan.consumers(m)):
                materialised.add(m)
        g.outputs = [m for m in g.members if m in materialised]
    ordered = _toposort(groups, deps)
    part = Partition(ordered, {}, materialised, graph)
    for g in list(ordered):
        if g.family == "matmul" and g.epilogue:
            _split_epilogue(part, g, plan)
        elif g.family == "attention":
            _absorb_cats(part, g, plan)
    for g in part.all_groups():
        for m in g.outputs:
            part.producer[m] = g.id
    return part


def _fits(plan: Plan, n: Node, g: Group, via: str) -> bool:
    """Can pointwise ``n`` (reading ``via``, computed by ``g``) be computed inside ``g``?"""
    if g.family == "matmul":
        return n.shape == g.domain
    if g.family == "reduction":
        row = row_shape(g.domain, g.reduce_dims)
        return n.shape == g.domain or (squeezed(n.shape) == squeezed(row) and math.prod(n.shape) == math.prod(row))
    return False


def _inlinable(plan: Plan, n: Node, g: Group) -> bool:
    """Inlining ``n`` into ``g``'s trees (recomputed where read) is always possible for
    pointwise, reduction and cat groups; in a matmul group only inside the epilogue."""
    if g.family in ("pointwise", "reduction", "cat", "scan"):
        return True
    if g.family == "matmul":
        return all(c in g.epilogue for c in plan.consumers(n.name))
    return False


def _reduction_clusters(plan: Plan) -> dict:
    """Reductions over the same (shape, dims) whose inputs reach one another through
    pointwise ops share a cluster id."""
    parent: dict[str, str] = {}

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x
    reds = [n for n in plan.graph.nodes if plan.kind(n.name) == "reduce"]
    for r in reds:
        parent[r.name] = r.name
    sig = {r.name: (plan.values[r.args[0]].shape, tuple(r.attrs["dims"])) for r in reds}
    for r in reds:
        shape, dims = sig[r.name]
        row = squeezed(row_shape(shape, dims))
        stack, seen = [r.args[0]], set()
        while stack:
            v = stack.pop()
            if v in seen:
                continue
            seen.add(v)
            n = plan.nodes.get(v)
            if n is None:
                continue
            # only through this domain's full-size and per-row values: a path through
            # other shapes (another norm's groups) is another group's business
            if n.shape != shape and squeezed(n.shape) != row:
                continue
            k = plan.kind(v)
            if k == "reduce":
                if sig[v] == sig[r.name]:
                    parent[find(v)] = find(r.name)
                continue
            if k in ("pointwise", "bool", "view"):
                stack.extend(n.refs())
    # reductions of the same shape and dims over the same input share its pass over memory
    # (mean and max of x), unless one depends on the other through something else
    ancestors = _ancestors(plan)
    by_input: dict = {}
    for r in reds:
        by_input.setdefault((plan.root(r.args[0]), sig[r.name]), []).append(r.name)
    for names in by_input.values():
        for a in names[1:]:
            if a not in ancestors[names[0]] and names[0] not in ancestors[a]:
                parent[find(a)] = find(names[0])
    return {r.name: find(r.name) for r in reds}


def _ancestors(plan: Plan) -> dict:
    out: dict[str, set] = {}
    for n in plan.graph.nodes:
        acc = set()
        for a in n.refs():
            acc.add(a)
            acc |= out.get(a, set())
        out[n.name] = acc
    return out


def _toposort(groups: list, deps: dict) -> list:
    done, out = set(), []
    remaining = sorted(groups, key=lambda g: g.order)
    while remaining:
        for g in remaining:
            if deps[g.id] <= done:
                out.append(g)
                done.add(g.id)
                remaining.remove(g)
                break
        else:
            raise RuntimeError("fusion groups depend on each other in a cycle (partition bug)")
    return out


def _split_epilogue(part: Partition, g: Group, plan: Plan) -> None:
    """The FUSE=0 form of a matmul's epilogue: its own pointwise group after the matmul,
    which then writes its raw product."""
    g.fuse = f"FUSE_{g.id}"
    split = Group(1000 + g.id, "pointwise", g.domain, members=list(g.epilogue), split_of=g.id, order=g.order)
    split.outputs = [m for m in g.epilogue if m in part.materialised]
    g.split = split


def _absorb_cats(part: Partition, g: Group, plan: Plan) -> None:
    """The FUSE=1 form of an attention group whose keys or values are a concatenation along
    the key axis that nothing else reads (a decode step's cached rows and its new ones): the
    attention reads each input of the concatenation where it lies, and the cat group (its
    *feed*, run just before it in the FUSE=0 form) copies nothing. The cat joins the
    attention's members, as a matmul's epilogue joins the matmul's."""
    node = plan.nodes[g.anchors[0]]
    for a in dict.fromkeys(node.args[1:3]):
        c = plan.nodes.get(a)
        if c is None or plan.kind(a) != "cat":
            continue
        rank = len(c.shape)
        cg = next((x for x in part.groups if a in x.members), None)
        if (cg is None or cg.family != "cat" or cg.members != [a] or c.attrs["dim"] % rank != rank - 2
                or a in plan.outputs or plan.viewed_outputs(a) or plan.consumers(a) != [node.name]):
            continue
        part.groups.remove(cg)
        cg.split_of = g.id
        g.feeds.append(cg)
        g.members.append(a)
    if g.feeds:
        g.members.sort(key=lambda m: plan.index[m])
        g.fuse = f"FUSE_{g.id}"
