"""Where an engine phase's time goes: each fusion group timed as its own workload.

A phase is one generated program whose groups run in the driver's order. Here each group
that runs under the phase's params (a ``FUSE_*`` bit of 1 runs a matmul's *fused* form, 0
its *unfused* form and the *split* epilogue) becomes a graph of its own at the phase's timed
shape: its member nodes, the views and masks they read through, every value it reads from
memory as an input (weights too) and every member another group (or the caller) reads as an
output (:func:`extract`). Groups with the same structure and sizes and the same knob values
(the same layer repeated) are timed once, each through
:func:`kernels.graph.workload.in_memory` and the harness's :class:`Evaluator`: sandboxed,
judged against the float64 interpreter on the harness's input distributions, then timed.
A group the harness finds wrong on random inputs (one that expects positive values, say) is
reported ``not timed`` with the harness's reason; it does not stop the breakdown.

The sum of the isolated groups is not the engine's time: each group alone starts with its
inputs where the harness left them, starts its own OpenMP region, and neither shares caches
with nor waits for its neighbours. The report says how far apart the two are where the
whole phase was timed too.

``breakdown(name, phase)`` stores its report in the engine record (``breakdown[phase]``).
Framework-free: nothing here imports Django, ``swarm/`` or ``bench/``.
"""
from __future__ import annotations

import hashlib
import json
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from kernels.codegen import program
from kernels.codegen.partition import Plan
from kernels.codegen.signature import active, describe, prefix, sizes
from kernels.engine import store
from kernels.graph import opset
from kernels.graph.ir import Graph, IRError, Tensor

NOT_THE_ENGINE = ("The sum of isolated groups is not the engine's time: alone, each group starts with its "
                  "inputs where the harness left them, starts its own threads, and neither shares caches with "
                  "nor waits for its neighbours.")
TIMED = ("ok", "suspicious")
# a first look: fewer timed calls, no second session while the host is busy
QUICK = {"min_calls": 5, "max_calls": 20, "timing_budget_s": 0.1, "retime": 0}


class BreakdownError(ValueError):
    """The breakdown cannot run: an unknown engine or phase, params that do not fit the phase."""


@dataclass
class Piece:
    """One running group of a phase as its own graph."""

    group: dict            # the program's summary of it: id, family, form, members, reads, knobs, signature
    graph: Graph | None    # None: it could not be cut out (``failure`` says why)
    key: str = ""          # the graph's structure and sizes (see :func:`canonical`)
    params: dict = field(default_factory=dict)   # its knobs in the isolated program
    notes: list = field(default_factory=list)
    failure: str = ""


# --------------------------------------------------------------------------- extraction

def members_of(group: dict, groups: list[dict]) -> list[str]:
    """The nodes a group computes in its form: a matmul's *unfused* form computes the product
    only (its epilogue's members are the split group's), an attention's reads the
    concatenations its feeds (cat groups) computed."""
    members = list(group["members"])
    if group.get("form") == "unfused":
        taken = {m for g in groups if g.get("form") == "split" and g.get("fuse") == group.get("fuse")
                 for m in g["members"]}
        members = [m for m in members if m not in taken]
    return members


def extract(planned: Graph, group: dict, groups: list[dict]) -> Graph:
    """The group as its own graph. ``planned``: the graph its members name
    (:attr:`kernels.codegen.program.Program.planned`). Views and bool masks a member reads
    through are followed (they are never computed on their own: the group computes through
    them); every other value from outside — what the group reads from memory, weights
    included — is an input; a member read outside the group, or returned, is an output."""
    plan = Plan(planned)
    values = planned.values()
    members = members_of(group, groups)
    inside = set(members)
    stack = list(members)
    while stack:
        for r in plan.nodes[stack.pop()].refs():
            if r in inside:
                continue
            kind = plan.kind(r)
            if kind in ("view", "bool") and r not in group.get("reads", ()):
                inside.add(r)
                stack.append(r)
    nodes = [n for n in planned.nodes if n.name in inside]
    inputs: dict[str, Tensor] = {}
    for n in nodes:
        for r in n.refs():
            if r not in inside and r not in inputs:
                v = values[r]
                inputs[r] = Tensor(r, tuple(v.shape), "input", getattr(v, "source", "") or "")
    returned = set(planned.outputs)
    outputs = [m for m in members
               if m in returned or m in group.get("outputs", ()) or any(c not in inside for c in plan.consumers(m))]
    if not outputs:   # nothing is read outside it: what it computes last is what it is for
        outputs = members[-1:]
    graph = Graph(tuple(inputs.values()), (), tuple(nodes), tuple(outputs))
    graph.validate()
    return graph


def canonical(graph: Graph) -> str:
    """A digest of the graph's structure and sizes, not its names: the same layer's group in
    another layer gives the same one."""
    names = {t.name: f"i{k}" for k, t in enumerate(graph.inputs)}
    names.update((n.name, f"n{k}") for k, n in enumerate(graph.nodes))
    blob = {"inputs": [list(t.shape) for t in graph.inputs],
            "nodes": [[n.op, [names[a] if isinstance(a, str) else repr(a) for a in n.args],
                       json.dumps(n.attrs, sort_keys=True, default=str), list(n.shape), n.dtype] for n in graph.nodes],
            "outputs": [names[o] for o in graph.outputs]}
    return hashlib.sha256(json.dumps(blob, sort_keys=True).encode()).hexdigest()[:16]


def pieces(planned: Graph, groups: list[dict], params: dict) -> list[Piece]:
    """Every group that runs under ``params`` (in driver order) as a :class:`Piece`."""
    out = []
    for g in active(groups, params):
        try:
            sub = extract(planned, g, groups)
        except IRError as exc:   # a group that does not stand alone is a row with the reason, not a crash
            out.append(Piece(g, None, f"uncut-{g['id']}", failure=f"it does not stand alone as a graph: {exc}"))
            continue
        out.append(Piece(g, sub, canonical(sub)))
    return out


# --------------------------------------------------------------------------- knobs

def counterpart(group: dict, sub_groups: list[dict]) -> dict | None:
    """The group of the isolated program that carries ``group``'s knobs: the largest of its
    family (in its fused form when the engine runs it fused)."""
    candidates = [s for s in sub_groups if s["family"] == group["family"] and s.get("form") in (None, "fused")]
    if group.get("form") == "fused":
        candidates = [s for s in candidates if s.get("form") == "fused"] or candidates
    return max(candidates, key=lambda s: len(s["members"])) if candidates else None


def own_params(group: dict, params: dict, sub_groups: list[dict], space, shape) -> tuple[dict, list[str]]:
    """The group's knob values in the engine (``G<id>_X``) as the isolated program's knobs:
    that program numbers its groups from 0, so ``G<id>_X`` becomes ``G<its id>_X`` of its
    group of the same family, and a fused form sets the isolated program's ``FUSE`` bit.
    Knobs the isolated program lacks, or values it refuses, keep its defaults (said in the notes)."""
    chosen = dict(space.default())
    notes = []
    form = group.get("form")
    target = counterpart(group, sub_groups)
    if target is None:
        return chosen, [f"no {group['family']} group in the isolated program: its defaults"]
    parts = len([s for s in sub_groups if s.get("form") in (None, "fused")])
    if parts > 1:
        notes.append(f"on its own the group partitions into {parts} groups")
    for s in sub_groups:
        if s.get("fuse") and s["fuse"] in chosen:
            chosen[s["fuse"]] = type(chosen[s["fuse"]])(form != "unfused")
    mine, theirs = prefix(group), prefix(target)
    missing = []
    for k, v in params.items():
        if k.startswith(mine) and k in group.get("knobs", ()):
            name = theirs + k[len(mine):]
            if name in chosen:
                chosen[name] = v
            else:
                missing.append(k)
    if missing:
        notes.append(f"not in the isolated program (its defaults): {', '.join(missing)}")
    problems = space.violations(chosen, [shape])
    if problems:
        notes.append(f"the engine's knobs are not legal alone ({problems[0]}): its defaults")
        chosen = dict(space.default())
    return chosen, notes


# --------------------------------------------------------------------------- the breakdown

@dataclass
class _Distinct:
    pieces: list
    workload: object = None
    source: str = ""
    params: dict = field(default_factory=dict)
    outcome: object = None
    failure: str = ""


@dataclass
class Phase:
    """One phase of an engine opened for its groups: its record entry, workload, source, the
    knobs chosen (defaults overridden by ``params``), timed shape and generated program."""

    phase: str
    info: dict
    wl: object
    source: str
    chosen: dict
    shape: object
    prog: object


def open_phase(name: str, phase: str | None, params: dict | None = None, ops_dir=None) -> Phase:
    """The phase (default: the first) of engine ``name`` at ``params``; BreakdownError for an
    unknown engine or phase, params that do not fit, or an import the generator no longer matches."""
    from kernels import workloads
    from kernels.graph import store as ops_store
    from kernels.graph.workload import Imported
    try:
        record = store.load(name, ops_dir)
    except store.EngineNotFound as exc:
        raise BreakdownError(str(exc)) from None
    phase = phase or next(iter(record["phases"]))
    if phase not in record["phases"]:
        raise BreakdownError(f"{name} has no phase {phase!r} (it has {', '.join(record['phases'])})")
    info = record["phases"][phase]
    path = ops_store.lookup(info["workload"], ops_dir)
    if path is None:
        raise BreakdownError(f"{name}: the {phase} phase's workload {info['workload']} is not in the ops store")
    wl = workloads.get(info["workload"])
    space = wl.template("cpu").space
    source, defaults = wl.template("cpu").seeds()[0]
    chosen = {**defaults, **(params or {})}
    shape = wl.shapes.typical[0]
    problems = space.violations(chosen, [shape])
    if problems:
        raise BreakdownError(f"the params do not fit {info['workload']}: {problems[0]}")
    imp = Imported(path)
    graph, _ = imp.shape(imp.index_of(shape))
    prog = program.generate(graph, title=info["workload"])     # the groups and the graph their members name
    stored = [(g["id"], g["family"], g.get("form")) for g in imp.meta.get("groups", [])]
    if stored and stored != [(g["id"], g["family"], g.get("form")) for g in prog.groups]:
        raise BreakdownError(f"{info['workload']}: the generator now partitions this phase differently from its "
                             "import; import the engine again")
    return Phase(phase, info, wl, source, chosen, shape, prog)


def breakdown(name: str, phase: str | None = None, *, params: dict | None = None, params_from: str = "",
              whole: bool = True, whole_ms: float | None = None, seeds: int = 2, quick: bool = False,
              ops_dir=None, on_progress=None) -> dict:
    """Time each group of engine ``name``'s ``phase`` (default: its first) on its own and
    store the report under ``breakdown[phase]`` in the record (returned).

    ``params``: the phase's knobs (a run's best; ``params_from`` says which, for the
    report), else the program's defaults. ``whole``: also time the whole phase at the same
    knobs in this breakdown, so the sum has an engine time beside it; else ``whole_ms`` (a
    median measured elsewhere, e.g. the run's) is used when given. ``seeds``: correctness
    seeds per group; ``quick``: a first look (5 to 20 timed calls within 0.1 s, no second
    session when the host is busy) instead of the harness's timing. ``on_progress(done,
    total, what)`` hears of each evaluation. Raises :class:`BreakdownError` for an unknown
    engine or phase or params that do not fit; a group that fails in the harness is a row
    marked not timed, with the reason."""
    from kernels.harness.evaluator import EvalSettings
    started = time.monotonic()
    ph = open_phase(name, phase, params, ops_dir)
    phase, info, wl, source, chosen, shape, prog = ph.phase, ph.info, ph.wl, ph.source, ph.chosen, ph.shape, ph.prog
    running = pieces(prog.planned, prog.groups, chosen)
    settings = EvalSettings(seeds=seeds, **(QUICK if quick else {}))
    with tempfile.TemporaryDirectory(prefix=f"int21-breakdown-{name}-") as folder:
        distinct = _distinct(running, chosen, Path(folder), f"{name}_{phase}")
        whole_out = _time(distinct, settings, on_progress or (lambda *a: None),
                          (source, chosen, wl) if whole else None, phase)
    if whole_out is not None and whole_out.status in TIMED:
        whole_ms = whole_out.median_ms

    rows = [_row(d) for d in distinct]
    timed = [r for r in rows if r["median_ms"] is not None]
    total_ms = sum(r["total_ms"] for r in timed)
    for r in rows:
        r["share"] = round(r["total_ms"] / total_ms, 4) if r["median_ms"] is not None and total_ms else None
    report = {
        "phase": phase, "workload": info["workload"], "shape": shape.as_dict(),
        "params": params_from or ("the given params" if params else "the program's defaults"),
        "groups": len(running), "distinct": len(rows), "rows": rows,
        "timed_groups": sum(r["count"] for r in timed),
        "not_timed": [{"ids": r["ids"], "reason": r["reason"]} for r in rows if r["median_ms"] is None],
        "sum_ms": round(total_ms, 6) if timed else None,
        "whole_ms": whole_ms, "whole": _whole_said(whole_out, whole_ms),
        "sum_over_whole": round(total_ms / whole_ms, 3) if timed and whole_ms else None,
        "note": NOT_THE_ENGINE,
        "seeds": seeds, "quick": quick, "created": time.time(), "seconds": round(time.monotonic() - started, 1),
    }
    store.update(name, ops_dir, breakdown={**(store.load(name, ops_dir).get("breakdown") or {}), phase: report})
    return report


def _distinct(running: list, chosen: dict, folder: Path, stem: str) -> list:
    """The running groups as distinct workloads: one per structure, sizes and knob values."""
    from kernels.graph.workload import in_memory
    by_graph: dict[str, object] = {}
    distinct: dict[tuple, _Distinct] = {}
    for p in running:
        if p.graph is None:
            by_graph[p.key] = p.failure
        elif p.key not in by_graph:
            try:
                by_graph[p.key] = in_memory(f"{stem}_g{p.group['id']}", p.graph, {}, folder / p.key)
            except (program.CodegenError, ValueError) as exc:   # the generator cannot write it alone: a row
                by_graph[p.key] = f"the generator cannot write it alone: {exc}"
        sub = by_graph[p.key]
        if isinstance(sub, str):
            d = distinct.setdefault((p.key, "failed"), _Distinct([], failure=sub))
        else:
            p.params, p.notes = own_params(p.group, chosen, list(sub.groups), sub.template("cpu").space,
                                           sub.shapes.typical[0])
            key = (p.key, json.dumps(p.params, sort_keys=True, default=str))
            d = distinct.setdefault(key, _Distinct([], sub, sub.template("cpu").seeds()[0][0], p.params))
        d.pieces.append(p)
    return list(distinct.values())


def _time(distinct: list, settings, say, whole, phase: str):
    """Judge and time each distinct group (its outcome lands on it); then the whole phase
    (``whole``: its source, params and workload) at the same knobs, without baselines."""
    from dataclasses import replace

    from kernels.harness.evaluator import Evaluator
    total = len([d for d in distinct if d.workload is not None]) + int(whole is not None)
    done = 0
    evaluator = Evaluator(settings)
    for d in distinct:
        if d.workload is None:
            continue
        first = d.pieces[0].group
        say(done, total, f"g{first['id']} {describe(first['signature'])} at {sizes(first['signature'])}")
        d.outcome = evaluator.evaluate(d.source, d.params, d.workload, "cpu")
        done += 1
    out = None
    if whole is not None:
        say(done, total, f"the whole {phase} phase")
        source, params, wl = whole
        out = Evaluator(replace(settings, baselines=())).evaluate(source, params, wl, "cpu")
    say(total, total, "timed")
    return out


def _whole_said(out, whole_ms) -> str | None:
    if out is not None:
        return ("timed in this breakdown at the same knobs" if out.status in TIMED
                else f"not timed: {out.status}: {out.reason}")
    return "measured by the phase's run" if whole_ms else None


def _computed(piece: Piece) -> list[str]:
    """What the piece computes (its views left out)."""
    if piece.graph is None:
        return list(piece.group["members"])
    return [n.name for n in piece.graph.nodes if opset.family(n.op) != "view"]


def _row(d: _Distinct) -> dict:
    first = d.pieces[0].group
    sig = first.get("signature") or {}
    form = first.get("form")
    what = f"{describe(sig)} at {sizes(sig)}"
    if form == "split":
        what = f"{what} (the epilogue of a matmul, {first.get('fuse')}=0)"
    elif form:
        what = f"{what} ({form}, {first.get('fuse')}={int(form == 'fused')})"
    row = {"ids": [p.group["id"] for p in d.pieces], "count": len(d.pieces), "family": first["family"],
           "form": form, "description": what,
           "members": _computed(d.pieces[0])[:6],
           "knobs": dict(d.params), "notes": sorted({n for p in d.pieces for n in p.notes}),
           "median_ms": None, "iqr_ms": None, "total_ms": 0.0, "status": "not_timed", "reason": d.failure}
    out = d.outcome
    if out is not None:
        row["status"] = out.status
        if out.status in TIMED:
            cand = out.timings["candidate"]
            row.update(median_ms=cand["median_ms"], iqr_ms=cand["iqr_ms"],
                       total_ms=len(d.pieces) * cand["median_ms"], reason=out.reason)
        else:
            row["reason"] = f"{out.status}: {out.reason}"
    if row["median_ms"] is None:
        row["reason"] = f"not timed: {row['reason']}"
    return row

