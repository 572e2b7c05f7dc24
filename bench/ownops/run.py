"""Own-ops benchmark: every problem in bench/ownops/problems imported, its generated kernel
judged by the harness (correctness, then timing at the problem's own shape), and compared
with the user's model in torch eager and under torch.compile.

    python -m bench.ownops.run [--only NAME,...] [--compile] [--search N] [--out FILE]

``--search N`` also tries N points of each design space (the fusion bits and the knobs, a
fixed random sample plus the defaults) and keeps the fastest correct one: a stand-in for a
swarm run of N evaluations. Summary figures as the own-ops issue states them: fast_0 (every
supported problem has a correct kernel), fast_1 vs eager and vs compile (share faster),
geometric-mean speedup over eager. Times are harness medians; where the harness could not
time a baseline (see baseline_timer.py), the baseline's median is measured in a separate
process right after, which is not interleaved and says so in the row.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
ROOT = HERE.parents[1]


def evaluate(wl, src, params, timing=True):
    from kernels.harness.evaluator import EvalSettings, Evaluator
    return Evaluator(EvalSettings(timing=timing, baselines=("torch", "torch_compile"), seeds=3)).evaluate(
        src, params, wl, "cpu")


def measure_baselines(name: str, which: list[str]) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-m", "bench.ownops.baseline_timer", name, ",".join(which)],
                         capture_output=True, text=True, env=env, timeout=900, cwd=ROOT)
    try:
        return json.loads(run.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": run.stderr[-500:]}


def one(path: Path, args) -> dict:
    from kernels import workloads
    from kernels.graph import service
    name = path.stem
    t0 = time.monotonic()
    row = {"name": name, "supported": False, "reason": "", "correct": False, "speedup_eager": None,
           "speedup_compile": None, "evaluations": 0, "minutes": 0.0}
    imp = service.import_problem(path.read_text(), name=name)
    if not imp.ok:
        row["reason"] = f"{imp.failure.kind}: {imp.failure.reason}"
        return row
    row["supported"] = True
    wl = workloads.get(name)
    template = wl.template("cpu")
    src = template.source()
    points = [template.space.default()]
    rng = random.Random(name)
    for _ in range(max(0, args.search - 1)):
        p = template.space.sample(rng, wl.shapes.typical)
        if p and p not in points:
            points.append(p)
    best = None
    for params in points:
        out = evaluate(wl, src, params)
        row["evaluations"] += 1
        if out.status != "ok":
            row.setdefault("failures", []).append(out.reason[:300])
            continue
        ms = out.timings["candidate"]["median_ms"]
        if best is None or ms < best[0]:
            best = (ms, params, out)
    row["minutes"] = round((time.monotonic() - t0) / 60, 2)
    if best is None:
        row["reason"] = "no correct kernel: " + "; ".join(row.get("failures", []))[:500]
        return row
    ms, params, out = best
    row.update(correct=True, kernel_ms=ms, params={k: v for k, v in params.items()})
    timings = out.timings
    base = {k: timings[k]["median_ms"] for k in ("torch", "torch_compile") if k in timings}
    if len(base) < (2 if args.compile else 1):
        want = ["torch"] + (["torch_compile"] if args.compile else [])
        got = measure_baselines(name, [w for w in want if w not in base])
        for k, v in got.items():
            if isinstance(v, dict):
                base[k] = v["median_ms"]
        row["baselines_interleaved"] = False
    else:
        row["baselines_interleaved"] = True
    row["baseline_ms"] = base
    if "torch" in base:
        row["speedup_eager"] = base["torch"] / ms
    if "torch_compile" in base:
        row["speedup_compile"] = base["torch_compile"] / ms
    return row


def summary(rows: list) -> dict:
    sup = [r for r in rows if r["supported"]]
    eager = [r["speedup_eager"] for r in sup if r["speedup_eager"]]
    comp = [r["speedup_compile"] for r in sup if r["speedup_compile"]]
    return {"fast_0": sum(r["correct"] for r in sup) / max(1, len(sup)),
            "fast_1_eager": sum(s > 1 for s in eager) / max(1, len(sup)),
            "fast_1_compile": sum(s > 1 for s in comp) / max(1, len(sup)) if comp else None,
            "geomean_eager": math.exp(sum(math.log(s) for s in eager) / len(eager)) if eager else None}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--compile", action="store_true", help="also torch.compile (slow to prepare)")
    ap.add_argument("--search", type=int, default=1)
    ap.add_argument("--out", default="")
    args = ap.parse_args(argv)
    os.environ.setdefault("INT21_OPS_DIR", tempfile.mkdtemp(prefix="int21-bench-ops-"))
    files = sorted((HERE / "problems").glob("*.py"))
    if args.only:
        files = [f for f in files if f.stem in args.only.split(",")]
    rows = []
    for f in files:
        row = one(f, args)
        rows.append(row)
        e, c = row["speedup_eager"], row["speedup_compile"]
        print(f"{row['name']:36s} {'ok' if row['correct'] else 'NO':3s} eager {e and f'{e:5.2f}x' or '  -  '} "
              f"compile {c and f'{c:5.2f}x' or '  -  '} {row.get('kernel_ms', 0):8.3f} ms  {row['reason'][:80]}",
              flush=True)
    result = {"problems": rows, "summary": summary(rows), "host": os.uname().nodename,
              "load": os.getloadavg(), "when": time.strftime("%Y-%m-%d %H:%M")}
    print(json.dumps(result["summary"]))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
