"""The GPU section: CUDA kernels against CuPy/cuBLAS and torch on the GPU, through the
same harness (CUDA target: compiled with nvcc/NVRTC, run and timed with CUDA events in a
sandbox child, interleaved with the workload's CUDA baselines). Runs only where the CUDA
target can run; elsewhere it says why in one line."""
from __future__ import annotations

import argparse
import datetime
import json
import random
import statistics
import sys
from pathlib import Path

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
        best = pick_best(rows)
        out["workloads"][name] = {"shape": shape.label(), "evaluated": rows, "best": best,
                                  "ok": sum(r["status"] == "ok" for r in rows),
                                  "median_score": statistics.median(r["score"] for r in rows)}
    return out


def pick_best(rows: list[dict]) -> dict:
    """The highest speedup over the strongest baseline; where a workload has no CUDA baseline
    (kda), the fastest correct kernel."""
    return max(rows, key=lambda r: (r["score"], r["status"] == "ok",
                                    -(r["median_ms"] or float("inf")) if r["status"] == "ok" else float("-inf")))


def campaign_lines(results: Path = Path(__file__).parent / "results") -> list[str]:
    """The newest device campaign's figures (bench/results/gpu-campaign-*.json, dry runs
    left out), or a line saying how to get them (docs/gpu.md)."""
    from bench.gpu_campaign import markdown
    found = []
    for p in sorted(results.glob("gpu-campaign-*.json")):
        try:
            state = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        if not state.get("dry_run"):
            found.append((state.get("started", ""), p, state))
    if not found:
        return ["No device campaign results yet: `make bench-gpu` on an H200 (docs/gpu.md) measures KDA against "
                "fla chunk_kda at the serving shapes, softmax/rmsnorm against the copy bandwidth, matmul against "
                "cuBLAS (fp32 and TF32) and the PTX seeds against the CUDA seeds."]
    _, path, state = max(found, key=lambda f: f[0])
    return [f"From `{path.name}`:", ""] + markdown(state).splitlines()


def gpu_lines(g: dict) -> list[str]:
    """The report's GPU section (markdown lines)."""
    if not g.get("ran"):
        return [f"No GPU section in this run — {g.get('why', 'not run')}. On a GPU host the same command "
                "evaluates each workload's CUDA kernels against CuPy/cuBLAS and torch "
                "(`bash bench/gpu_check.sh` collects it on the H200 host: `python -m bench gpu`).",
                ""] + campaign_lines()
    lines = [f"GPU: `{g['fingerprint']}`", "", "| workload | shape | best CUDA kernel | median ms | ratios | "
             "correct/evaluated |", "|---|---|---|---|---|---|"]
    for wl, w in g["workloads"].items():
        if "best" not in w:
            lines.append(f"| {wl} | | {w.get('status')} | | | |")
            continue
        b = w["best"]
        ratios = ", ".join(f"{k} {v:.2f}x" for k, v in b["speedup"].items())
        ms = "—" if b["median_ms"] is None else f"{b['median_ms']:.4f}"
        lines.append(f"| {wl} | {w['shape']} | `{b['params']}` {b['status']} | {ms} "
                     f"| {ratios or b['reason'][:80]} | {w['ok']}/{len(w['evaluated'])} |")
    return lines


def main(argv=None) -> int:
    """``python -m bench gpu [--quick] [--out DIR]``: the GPU section alone, framework-free
    (GPU hosts may have no Django); writes bench-gpu-<date>.json and prints its table."""
    ap = argparse.ArgumentParser(prog="python -m bench gpu", description=main.__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default="bench/results")
    ap.add_argument("--workload", action="append", default=None)
    args = ap.parse_args(argv)
    started = datetime.datetime.now(datetime.timezone.utc)
    sec = section(quick=args.quick, workload_names=args.workload or workloads.names())
    sec.update(command="python -m bench gpu " + " ".join(argv if argv is not None else sys.argv[1:]),
               date=started.isoformat(timespec="seconds"))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"bench-gpu-{started.date()}.json"
    path.write_text(json.dumps(sec, indent=1, default=str))
    print("\n".join(gpu_lines(sec)))
    print(f"wrote {path}")
    return 0
