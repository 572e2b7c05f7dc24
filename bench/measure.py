"""Measured once, replayed for everyone.

Every point any searcher asks for is measured once by the real evaluator (the sandboxed
harness: correctness cases, then timing interleaved with the baselines) and kept in a
table for this run of the benchmark — Kernel Tuner's "simulation mode", filled lazily.
Searchers then replay against the same measurements, so they are compared on equal terms
(same evaluator, same noise), and a point measured for one searcher is not re-measured
for another.

One measurement of a point is one draw from a noisy host (a 2-core VM's memory bandwidth
drifts by 10-20% over seconds), and the highest of a few hundred draws is an optimist. So
before any figure is computed the top points are *confirmed*: measured again in fresh
evaluations until the best few each have ``1 + extra`` measurements, and a point's score is
the median of its measurements. Traces are rescored from the table afterwards, so every
searcher is credited with the same confirmed figure for the same point.
"""
from __future__ import annotations

import json
import statistics
import time

from kernels import workloads
from kernels.harness.evaluator import EvalSettings, Evaluator
from swarm.types import Result


def shape_of(wl, text: str):
    """A table's shape text as a Shape: ``""`` is the workload's typical shape (a goal that
    names none), for workloads whose typical shape has dims a goal cannot name (an engine
    phase's zero-length cache offset)."""
    return wl.goal_shapes([text] if text else [])[0]


class Table:
    """(shape, params) → Result (+ timings and roofline figures of the full outcome)."""

    def __init__(self, workload: str, min_calls: int, log=print, settings: dict | None = None):
        self.workload = workload
        self.settings = dict(settings or {})    # more EvalSettings fields for every measurement
        self.rows: dict[str, dict] = {}
        self.sources: dict[str, str] = {}    # key → the source measured (kept out of the JSON)
        self.evaluator_calls = 0
        self.min_calls = min_calls
        self.started = time.monotonic()
        self.log = log or (lambda *_a, **_k: None)
        self.deadline: float | None = None   # time.monotonic() past which nothing new is measured

    def key(self, shape: str, params: dict) -> str:
        return shape + "|" + json.dumps(params, sort_keys=True)

    def measure(self, shape: str, source: str, params: dict) -> Result:
        k = self.key(shape, params)
        if k not in self.rows:
            if self.deadline is not None and time.monotonic() > self.deadline:
                raise TimeUp(f"{self.workload}: time limit reached before measuring {params}")
            wl = workloads.get(self.workload)
            ev = Evaluator(EvalSettings(timing_shape=shape_of(wl, shape), min_calls=self.min_calls,
                                        **self.settings))
            out = ev.evaluate(source, params, wl, "cpu")
            self.evaluator_calls += 1
            res = Result.from_outcome(out)
            self.sources[k] = source
            sanity = out.stage("sanity")
            self.rows[k] = {"shape": shape, "params": params, "result": res.to_json(),
                            "timings": {n: {kk: t[kk] for kk in ("median_ms", "iqr_ms", "min_ms", "n")}
                                        for n, t in out.timings.items()},
                            "roofline": {kk: v for kk, v in (sanity.details if sanity else {}).items()
                                         if kk.startswith(("achieved", "pct"))}}
            tag = f"{res.status} {res.score:.2f}x" if res.ok else res.status
            self.log(f"    measured #{self.evaluator_calls:<4} {shape} {params} → {tag}"
                     f"   [{time.monotonic() - self.started:6.0f}s]", flush=True)
        return Result(**self.rows[k]["result"])

    def score(self, shape: str, params: dict, default: float = 0.0) -> float:
        """The point's current score (the median of its measurements once confirmed)."""
        row = self.rows.get(self.key(shape, params))
        return row["result"]["score"] if row else default

    def confirm(self, shape: str, top: int = 6, extra: int = 2, rounds: int = 4) -> int:
        """Measure the ``top`` best correct points again (``extra`` fresh evaluations each,
        taken round-robin so a slow phase of the host is shared out) and score each by the
        median of its measurements. Repeats while an unconfirmed point has risen into the
        top. Returns the number of extra evaluations."""
        done = 0
        for _ in range(rounds):
            rows = sorted((r for r in self.rows.values() if r["shape"] == shape and r["result"]["status"] == "ok"),
                          key=lambda r: -r["result"]["score"])[:top]
            todo = [r for r in rows if len(r.get("scores", [])) < 1 + extra]
            if not todo:
                break
            for r in todo:
                r.setdefault("scores", [r["result"]["score"]])
            for _ in range(extra):
                for r in todo:
                    if len(r["scores"]) < 1 + extra:
                        self._again(r)
                        done += 1
        return done

    def remeasure(self, shape: str, params: dict, round: int) -> float | None:
        """The point's measurement number ``round + 1`` (a swarm run confirming its best few),
        taken fresh if the table does not have it yet, shared like every measurement. None
        past the deadline."""
        r = self.rows[self.key(shape, params)]
        r.setdefault("scores", [r["result"]["score"]])
        while len(r["scores"]) <= round:
            if self.deadline is not None and time.monotonic() > self.deadline:
                return None
            self._again(r)
        return r["scores"][round]

    def _again(self, r: dict) -> None:
        """One more fresh evaluation of a row; its score becomes the median of its measurements."""
        wl = workloads.get(self.workload)
        ev = Evaluator(EvalSettings(timing_shape=shape_of(wl, r["shape"]), min_calls=self.min_calls,
                                    **self.settings))
        out = ev.evaluate(self.sources[self.key(r["shape"], r["params"])], r["params"], wl, "cpu")
        self.evaluator_calls += 1
        again = Result.from_outcome(out)
        # A point that fails on a later measurement scores 0 there: a kernel that is correct
        # only sometimes is not a best.
        r["scores"].append(again.score if again.ok else 0.0)
        r["result"]["score"] = statistics.median(r["scores"])
        self.log(f"    confirmed {r['shape']} {r['params']} → {r['scores'][-1]:.2f}x", flush=True)

    def best(self, shape: str) -> dict | None:
        rows = [r for r in self.rows.values() if r["shape"] == shape]
        return max(rows, key=lambda r: r["result"]["score"], default=None)


class TimeUp(Exception):
    """The benchmark's time limit came before this measurement (the searcher stops there)."""


class TableExecutor:
    """The swarm's Executor seam, answered from the table (measuring what is new)."""

    def __init__(self, table: Table):
        self.table = table

    def evaluate(self, goal, candidates):
        shape = goal.shapes[0] if goal.shapes else ""
        for c in candidates:
            yield c.id, self.table.measure(shape, c.source, c.params), None

    def remeasure(self, goal, candidates, round):
        shape = goal.shapes[0] if goal.shapes else ""
        for c in candidates:
            score = self.table.remeasure(shape, c.params, round)
            if score is not None:
                yield c.id, Result(status="ok", reason="re-measured", score=score)


def best_so_far(scores):
    out, best = [], 0.0
    for s in scores:
        best = max(best, s)
        out.append(best)
    return out


def evals_to(curve, target):
    """Evaluations a best-so-far curve needs to reach ``target`` (None: never)."""
    return next((i + 1 for i, v in enumerate(curve) if v >= target), None)
