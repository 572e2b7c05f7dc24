"""Each fusion group of an engine phase tuned as its own workload, before the phase is searched.

A phase is one generated program; its design space is every group's knobs at once, which a
search of the whole phase explores slowly (a decoder's decode step has ~80 groups, each
evaluation of the whole phase costs the whole model). Most of that space separates: a
group's best knobs depend on its structure and sizes, hardly on its neighbours. So here each
distinct group (the breakdown's cut: its members as a graph of its own at the phase's timed
shape, the same layer repeated counted once) is judged and timed alone, through the
harness, at its default point and at up to ``per_group - 1`` more points found by a climb
one knob at a time (:func:`_climb`: the algorithm choices first, then the knobs live there,
in a seeded order); the fastest correct point wins, and is written back onto every group of
that structure in the phase (``G<id>_X``). The composed point is checked against the phase's
space; a group whose knobs do not fit is left at its defaults (said in the notes).

The result is a *starting point*, not a measurement of the engine: the caller (the engine
run) hands it to the phase's search as the place to start, and the search judges it as a
whole like any candidate. Framework-free: nothing here imports Django or ``swarm/``.
"""
from __future__ import annotations

import random
import tempfile
import time
from pathlib import Path

from kernels.codegen.signature import describe, prefix, sizes
from kernels.engine import store
from kernels.engine.breakdown import (QUICK, TIMED, BreakdownError, _distinct, counterpart, open_phase, pieces)


def tune(name: str, phase: str | None = None, *, per_group: int = 6, seed: int = 0, seeds: int = 2,
         quick: bool = True, ops_dir=None, on_progress=None) -> dict:
    """Tune every distinct group of ``phase`` alone (``per_group`` points each, the default
    first). Returns ``{"phase", "workload", "params" (the composed point, whole phase),
    "groups": [rows], "evaluations", "seconds"}`` and stores it under ``tuned[phase]``."""
    from kernels.harness.evaluator import EvalSettings, Evaluator
    if per_group < 1:
        raise BreakdownError("per_group must be at least 1")
    started = time.monotonic()
    ph = open_phase(name, phase, None, ops_dir)
    space = ph.wl.template("cpu").space
    running = pieces(ph.prog.planned, ph.prog.groups, ph.chosen)
    settings = EvalSettings(seeds=seeds, baselines=(), **(QUICK if quick else {}))
    evaluator = Evaluator(settings)
    say = on_progress or (lambda *a: None)
    rng = random.Random(seed)
    rows, composed, evaluations = [], dict(ph.chosen), 0
    with tempfile.TemporaryDirectory(prefix=f"int21-tune-{name}-") as folder:
        distinct = [d for d in _distinct(running, ph.chosen, Path(folder), f"{name}_{ph.phase}") if d.workload]
        total = len(distinct) * per_group
        for d in distinct:
            first = d.pieces[0].group
            what = f"g{first['id']} {describe(first['signature'])} at {sizes(first['signature'])}"
            sub_space = d.workload.template("cpu").space
            shape = d.workload.shapes.typical[0]
            # the partition stays the engine's: the isolated program's fusion bits keep their values
            fixed = {g["fuse"] for g in d.workload.groups if g.get("fuse") in d.params}
            done = evaluations
            tried = _climb(lambda p, d=d: _timed(evaluator, d, p), dict(d.params), sub_space, shape, per_group,
                           rng, fixed, lambda n, what=what, done=done: say(done + n, total, what))
            evaluations += len(tried)
            points = [p for _, p, _ in tried]
            ok = [t for t in tried if t[0] is not None]
            default_ms = tried[0][0]
            row = {"ids": [pc.group["id"] for pc in d.pieces], "family": first["family"], "description": what,
                   "points": len(tried), "default_ms": default_ms, "best_ms": None, "knobs": {}, "notes": []}
            if ok:
                best_ms, best, _ = min(ok, key=lambda t: t[0])
                row.update(best_ms=best_ms, gain=round(default_ms / best_ms, 3) if default_ms else None)
                if best != points[0]:
                    knobs = _back(d, best)
                    trial = {**composed, **knobs}
                    problems = space.violations(trial, [ph.shape])
                    if problems:
                        row["notes"].append(f"its best knobs do not fit the phase ({problems[0]}): its defaults")
                    else:
                        composed = trial
                        row["knobs"] = knobs
            else:
                row["notes"].append(f"no point was correct and timed alone ({tried[0][2]})")
            rows.append(row)
    say(total, total, "tuned")
    report = {"phase": ph.phase, "workload": ph.info["workload"], "shape": ph.shape.as_dict(),
              "params": {k: v for k, v in composed.items() if ph.chosen.get(k) != v},
              "groups": rows, "evaluations": evaluations, "per_group": per_group, "seed": seed,
              "created": time.time(), "seconds": round(time.monotonic() - started, 1)}
    store.update(name, ops_dir, tuned={**(store.load(name, ops_dir).get("tuned") or {}), ph.phase: report})
    return report


def _timed(evaluator, d, point: dict) -> tuple:
    """One isolated group judged and timed: ``(median ms or None, status)``."""
    out = evaluator.evaluate(d.source, point, d.workload, "cpu")
    return (out.timings["candidate"]["median_ms"] if out.status in TIMED else None), out.status


def _climb(measure, start: dict, space, shape, budget: int, rng: random.Random, frozen: set,
           before=lambda n: None) -> list:
    """A one-knob-at-a-time climb from ``start`` within ``budget`` evaluations: the start,
    then its neighbours (:meth:`DesignSpace.neighbours`: the algorithm choices first, then
    the live knobs' other values in a seeded order); each faster correct point becomes the
    new start and the climb goes on from its neighbours. Random draws over a group's space
    rarely land near anything good (a GEMM's 13 knobs, most of them dead under any one
    algorithm); a neighbour of the generator's defaults keeps everything that made them
    good but one choice. Returns ``[(ms or None, point, status)]`` in the order tried."""
    tried, seen = [], set()
    best_ms, queue = None, [start]
    while queue and len(tried) < budget:
        p = queue.pop(0)
        key = tuple(sorted(p.items()))
        if key in seen:
            continue
        seen.add(key)
        before(len(tried))
        ms, status = measure(p)
        tried.append((ms, p, status))
        if ms is not None and (best_ms is None or ms < best_ms):
            best_ms = ms
            queue = space.neighbours(p, [shape], rng, frozen=frozen)
    return tried


def _back(d, best: dict) -> dict:
    """The isolated program's winning knobs as the phase's knobs, on every group of the structure."""
    out = {}
    target = counterpart(d.pieces[0].group, list(d.workload.groups))
    if target is None:
        return out
    theirs = prefix(target)
    for pc in d.pieces:
        mine = prefix(pc.group)
        for k, v in best.items():
            if k.startswith(theirs) and (mine + k[len(theirs):]) in pc.group.get("knobs", ()):
                out[mine + k[len(theirs):]] = v
    return out
