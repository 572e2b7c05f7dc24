"""Timing statistics. Speedups are ratios of medians measured in the same session."""
from __future__ import annotations

import statistics
import time


def summarize(samples_ms: list[float]) -> dict:
    s = sorted(samples_ms)
    if not s:
        return {"n": 0}
    q = statistics.quantiles(s, n=4) if len(s) >= 4 else [s[0], statistics.median(s), s[-1]]
    return {
        "n": len(s),
        "median_ms": statistics.median(s),
        "min_ms": s[0],
        "q1_ms": q[0],
        "q3_ms": q[2],
        "iqr_ms": q[2] - q[0],
        "samples_ms": [round(x, 6) for x in samples_ms],
    }


def speedups(timings: dict) -> dict:
    cand = timings.get("candidate", {}).get("median_ms")
    if not cand:
        return {}
    return {name: t["median_ms"] / cand for name, t in timings.items()
            if name != "candidate" and t.get("median_ms")}


# --------------------------------------------------------------------------- the interleaved loop

class Impl:
    """One implementation in a timing session. ``call()`` runs it once (or one batch) and
    returns the seconds per call by its timer — the evaluator's clock around a sandbox
    process's call, or a GPU's CUDA events — or None when the session must end (the
    caller keeps why). ``probe``: timed like the others, never a baseline."""

    def __init__(self, name: str, call, *, probe: bool = False, before=None):
        self.name, self.call, self.probe, self.before = name, call, probe, before
        self.warm_s = 0.0
        self.stride = 1


def interleave(impls: list, *, rng, min_calls: int, max_calls: int, budget_s: float,
               target_rel_err: float, warmup: int = 2, base_min_calls: int = 7) -> dict | None:
    """Time ``impls`` against each other, taking turns in a secret random order each round,
    on whatever data the calls themselves arrange. The first impl is the candidate. A much
    slower impl is timed every ``stride``-th round (still interleaved), so a 75 ms baseline
    does not dominate a session. Stops after ``min_calls`` rounds once every median is within
    ``target_rel_err`` or the budget is spent, at ``max_calls`` at the latest. Returns the
    samples (ms) per impl, or None if a call said stop."""
    first = impls[0]
    for impl in impls:
        for _ in range(warmup if impl is first else 1):
            t = impl.call()
            if t is None:
                return None
            impl.warm_s = t
    max_stride = max(1, min_calls // base_min_calls)
    for impl in impls:
        ratio = impl.warm_s / max(first.warm_s, 1e-9)
        impl.stride = 1 if impl is first else int(max(1, min(max_stride, ratio)))
    samples = {impl.name: [] for impl in impls}
    started = time.perf_counter()
    for rnd in range(max_calls):
        order = [impls[i] for i in rng.permutation(len(impls))]
        for impl in order:
            if rnd % impl.stride:
                continue
            t = impl.call()
            if t is None:
                return None
            samples[impl.name].append(t * 1e3)
        timed = [samples[i.name] for i in impls if not i.probe]
        if rnd + 1 >= min_calls and all(len(v) >= base_min_calls for v in timed):
            precise = all(rel_err(v) < target_rel_err for v in timed)
            if precise or time.perf_counter() - started > budget_s:
                break
    return samples


def rel_err(s: list[float]) -> float:
    """The interquartile range over the median, over √n: how well the median is known."""
    if len(s) < 4:
        return 1.0
    q = statistics.quantiles(s, n=4)
    med = statistics.median(s)
    return (q[2] - q[0]) / med / (len(s) ** 0.5) if med > 0 else 1.0
