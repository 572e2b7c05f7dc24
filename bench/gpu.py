"""The GPU section: CUDA kernels against CuPy/cuBLAS and torch on the GPU, through the
same harness (CUDA target: compiled with nvcc/NVRTC, run and timed with CUDA events in a
sandbox child, interleaved with the workload's CUDA baselines). Runs only where the CUDA
target can run; elsewhere it says why in one line."""
from __future__ import annotations

import random
import statistics

from kernels import targets as ktargets
from kernels import workloads
from kernels.harness.evaluator import EvalSettings, Evaluator


def section(*, quick: bool, workload_names: list, clock=None) -> dict:
    tgt = ktargets.get("cuda")
    ok, why = tgt.available()
    runnable, why_not = tgt.can_run() if ok else (False, why)
    if not runnable:
        return {"ran": False, "why": f"skipped: {why_not or why}"}
    extra = 2 if quick else 8        # random legal points beyond the seeds
    out = {"ran": True, "fingerprint": tgt.fingerprint(), "workloads": {}}
    for name in workload_names:
        if clock is not None and clock.out():
            out["workloads"][name] = {"status": "skipped: the run's time limit was reached"}
            continue
        wl = workloads.get(name)
        if "cuda" not in wl.templates:
            continue
        tpl = wl.template("cuda")
        shape = wl.shapes.typical[0]
        points = [p for _, p in tpl.seeds()]
        rng = random.Random(f"gpu:{name}")
        for _ in range(extra):
            p = tpl.space.sample(rng, [shape])
            if p is not None and p not in points:
                points.append(p)
        ev = Evaluator(EvalSettings(timing_shape=shape, target_rel_err=0.01))
        rows = []
        for p in points:
            o = ev.evaluate(tpl.source(tpl.variant_of(p)), p, wl, "cuda")
            rows.append({"params": p, "status": o.status, "reason": o.reason, "median_ms": o.median_ms,
                         "speedup": dict(o.speedup),
                         "score": min(o.speedup.values()) if o.status == "ok" and o.speedup else 0.0})
        best = max(rows, key=lambda r: r["score"])
        out["workloads"][name] = {"shape": shape.label(), "evaluated": rows, "best": best,
                                  "ok": sum(r["status"] == "ok" for r in rows),
                                  "median_score": statistics.median(r["score"] for r in rows)}
    return out
