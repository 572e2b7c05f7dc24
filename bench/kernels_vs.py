"""A kernel against what an engineer would use instead, and against the machine.

Each session is one full evaluation through the harness (sandboxed child: correctness
cases, then the candidate timed interleaved with every CPU baseline of the workload,
torch.compile included). A ratio is baseline median / candidate median within one
session; over several sessions the report gives the median ratio and its min–max spread.
The NumPy baseline runs OpenBLAS's native kernel: the sandbox child's environment never
carries ``OPENBLAS_CORETYPE``/``OPENBLAS_L2_SIZE`` (``sandbox.minimal_env``), and the BLAS
the child loaded is recorded from threadpoolctl.
"""
from __future__ import annotations

import os
import statistics

from kernels import workloads
from kernels.harness.evaluator import EvalSettings, Evaluator
from kernels.harness.roofline import FIGURES, measure_host

OPENBLAS_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def measure_roofline(fingerprint: dict, earlier: dict | None = None) -> dict:
    """STREAM copy/triad and peak FMA throughput, measured now. The FMA probe also runs
    with 512-bit vectors where the host has AVX-512 (its default is 256-bit, and cores with
    512-bit FMA pipes reach twice that). A busy host only ever makes these figures low, so
    with an ``earlier`` measurement of the same run the higher of each figure is kept."""
    probes = [measure_host(fingerprint)]      # the harness's own probes (512-bit too on AVX-512)
    out = dict(earlier or {})
    out.setdefault("measurements", [])
    out["measurements"] = out["measurements"] + probes
    for figure in FIGURES:
        out[figure] = max([p.get(figure, 0.0) for p in out["measurements"]] +
                          ([p.get("peak_gflops_512bit", 0.0) for p in out["measurements"]]
                           if figure == "peak_gflops" else []))
    out["threads"] = probes[0].get("threads")
    return out


def baseline_kind(name: str) -> str:
    if name == "numpy":
        return "numpy"
    if "compile" in name:
        return "torch_compile"
    if name.startswith("torch"):
        return "torch_eager"
    return "other"


def roofline_of(wl, shape, median_ms: float, ceilings: dict) -> dict:
    """Achieved bandwidth/FLOP rate and its share of this host's ceilings (measured in this
    run): % of STREAM copy bandwidth, % of peak FLOP/s, and % of the roofline's attainable
    rate min(peak, intensity × copy bandwidth)."""
    secs = median_ms / 1e3
    nbytes, flops = wl.bytes_moved(shape), wl.flops(shape)
    gbs, gflops = nbytes / secs / 1e9, flops / secs / 1e9
    bw, peak = ceilings.get("copy_gbs") or 0.0, ceilings.get("peak_gflops") or 0.0
    out = {"achieved_gbs": gbs, "achieved_gflops": gflops, "intensity_flop_per_byte": flops / nbytes}
    if bw:
        out["pct_of_copy_bandwidth"] = 100 * gbs / bw
    if peak:
        out["pct_of_peak_flops"] = 100 * gflops / peak
    if bw and peak:
        attainable = min(peak, flops / nbytes * bw)
        out["attainable_gflops"] = attainable
        out["pct_of_roofline"] = 100 * gflops / attainable
        out["bound"] = "compute" if peak < flops / nbytes * bw else "memory"
    return out


def compare(workload: str, shape_text: str, source: str, params: dict, *, sessions: int, min_calls: int,
            ceilings: dict, compile_baseline: bool = True, on_session=None,
            timing_budget_s: float | None = None) -> dict:
    wl = workloads.get(workload)
    shape = wl.shape_from_text(shape_text)
    names = [b.name for b in wl.baselines.get("cpu", ()) if b.default or (compile_baseline and "compile" in b.name)]
    budget = {} if timing_budget_s is None else {"timing_budget_s": timing_budget_s}
    ev = Evaluator(EvalSettings(timing_shape=shape, min_calls=min_calls, baselines=tuple(names), **budget))
    runs, blas, notes = [], None, []
    for i in range(sessions):
        out = ev.evaluate(source, params, wl, "cpu")
        if on_session:
            on_session(i, out)
        if out.status != "ok":
            runs.append({"status": out.status, "reason": out.reason})
            continue
        bench = out.stage("benchmark")
        blas = (bench.details.get("blas") if bench else None) or blas
        notes += [n for n in out.notes if n not in notes]
        sanity = out.stage("sanity")
        roof = sanity.details if sanity else {}
        runs.append({"status": "ok", "speedup": dict(out.speedup),
                     "timings": {n: {k: t.get(k) for k in ("median_ms", "iqr_ms", "min_ms", "n")}
                                 for n, t in out.timings.items()},
                     "copy_probe_gbs": roof.get("session_copy_gbs"),
                     "pct_of_session_copy": roof.get("pct_of_session_copy")})
    ok = [r for r in runs if r["status"] == "ok"]
    result = {"shape": shape_text, "params": params, "sessions": sessions, "sessions_ok": len(ok),
              "runs": runs, "baselines": {}, "blas": blas, "notes": notes,
              "environment_of_measurement": {v: None for v in OPENBLAS_VARS},
              "environment_of_bench_process": {v: os.environ.get(v) for v in OPENBLAS_VARS}}
    if not ok:
        result["status"] = runs[0]["status"] if runs else "not run"
        result["reason"] = runs[0].get("reason", "") if runs else ""
        return result
    result["status"] = "ok"
    cand = statistics.median(r["timings"]["candidate"]["median_ms"] for r in ok)
    result["candidate"] = {"median_ms": cand,
                           "iqr_ms": statistics.median(r["timings"]["candidate"]["iqr_ms"] for r in ok),
                           "roofline": roofline_of(wl, shape, cand, ceilings)}
    # Each session's own streaming copy, timed interleaved with the candidate: the kernel's
    # bandwidth as a share of what the memory system gave in that very minute.
    probed = [r for r in ok if r.get("copy_probe_gbs") and r.get("pct_of_session_copy")]
    if probed:
        pcts = [r["pct_of_session_copy"] for r in probed]
        result["candidate"]["session_copy"] = {
            "gbs": statistics.median(r["copy_probe_gbs"] for r in probed),
            "gbs_min": min(r["copy_probe_gbs"] for r in probed), "gbs_max": max(r["copy_probe_gbs"] for r in probed),
            "pct": statistics.median(pcts), "pct_min": min(pcts), "pct_max": max(pcts)}
    for name in names:
        ratios = [r["speedup"][name] for r in ok if name in r["speedup"]]
        meds = [r["timings"][name]["median_ms"] for r in ok if name in r["timings"]]
        if not ratios:
            result["baselines"][name] = {"kind": baseline_kind(name), "status": "not measured"}
            continue
        med = statistics.median(meds)
        result["baselines"][name] = {
            "kind": baseline_kind(name),
            "ratio_median": statistics.median(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios),
            "median_ms": med,
            "iqr_ms": statistics.median(r["timings"][name]["iqr_ms"] for r in ok if name in r["timings"]),
            "roofline": roofline_of(wl, shape, med, ceilings)}
    # The best of each kind (e.g. kda's recurrent and chunked torch implementations).
    kinds = {}
    for name, b in result["baselines"].items():
        if "ratio_median" in b and (b["kind"] not in kinds or b["ratio_median"] < kinds[b["kind"]]["ratio_median"]):
            kinds[b["kind"]] = {"name": name, "ratio_median": b["ratio_median"],
                                "ratio_min": b["ratio_min"], "ratio_max": b["ratio_max"]}
    torch_all = [b for b in result["baselines"].values()
                 if b.get("kind") in ("torch_eager", "torch_compile") and "ratio_median" in b]
    if torch_all:
        best = min(torch_all, key=lambda b: b["ratio_median"])
        kinds["torch_best"] = {"name": next(n for n, b in result["baselines"].items() if b is best),
                               "ratio_median": best["ratio_median"], "ratio_min": best["ratio_min"],
                               "ratio_max": best["ratio_max"]}
    result["by_kind"] = kinds
    return result


def recompute_roofline(kernels: dict, ceilings: dict) -> None:
    """Every share of the roofline in a kernels section, against ``ceilings``."""
    for wname, shapes in kernels.items():
        wl = workloads.get(wname)
        for shape_text, k in shapes.items():
            if k.get("status") != "ok":
                continue
            shape = wl.shape_from_text(shape_text)
            k["candidate"]["roofline"] = roofline_of(wl, shape, k["candidate"]["median_ms"], ceilings)
            for b in k["baselines"].values():
                if b.get("median_ms"):
                    b["roofline"] = roofline_of(wl, shape, b["median_ms"], ceilings)
