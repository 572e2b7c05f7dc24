"""Timing statistics. Speedups are ratios of medians measured in the same session."""
from __future__ import annotations

import statistics


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
