"""Measured once, replayed for everyone.

Every point any searcher asks for is measured once by the real evaluator (the sandboxed
harness: correctness cases, then timing interleaved with the baselines) and kept in a
table for this run of the benchmark — Kernel Tuner's "simulation mode", filled lazily.
Searchers then replay against the same measurements, so they are compared on equal terms
(same evaluator, same noise), and a point measured for one searcher is not re-measured
for another.
"""
from __future__ import annotations

import json
import time

from kernels import workloads
from kernels.harness.evaluator import EvalSettings, Evaluator
from swarm.types import Result


class Table:
    """(shape, params) → Result (+ timings and roofline figures of the full outcome)."""

    def __init__(self, workload: str, min_calls: int, log=print):
        self.workload = workload
        self.rows: dict[str, dict] = {}
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
            ev = Evaluator(EvalSettings(timing_shape=wl.shape_from_text(shape), min_calls=self.min_calls))
            out = ev.evaluate(source, params, wl, "cpu")
            self.evaluator_calls += 1
            res = Result.from_outcome(out)
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
        shape = goal.shapes[0]
        for c in candidates:
            yield c.id, self.table.measure(shape, c.source, c.params), None


def best_so_far(scores):
    out, best = [], 0.0
    for s in scores:
        best = max(best, s)
        out.append(best)
    return out


def evals_to(curve, target):
    """Evaluations a best-so-far curve needs to reach ``target`` (None: never)."""
    return next((i + 1 for i, v in enumerate(curve) if v >= target), None)
