"""Benchmark of lessons keyed by fusion-group signature (not a test): does a second problem
that contains a group already tuned start from what was learnt?

    python -m bench group-lessons [--first FILE] [--second FILE] [--budget 16] [--second-budget 8]
                                  [--seeds 3] [--quick]

Both problem files are imported (the sandboxed capture, as ``manage.py import_op`` does) into
a store of this run's own. Per seed: a cold swarm run on the first problem records its lessons
(whole-problem, and projected onto each of its groups by signature); then the second problem
is searched twice at equal budget, with those lessons and cold. Every point is measured by
the real harness once and kept in a table per problem (``bench.measure.Table``), so both
runs on the second problem are scored by the same measurements; its top points are measured
again and scored by their median before the curves are compared (no credit for a lucky
draw). Reported: best-so-far after 5, 10 and the budget's evaluations (medians over seeds,
seeds ahead / level / behind), and the evaluations the run with lessons needs to reach the
cold run's final best.

The default pair shares the GEMM + bias group (``matmul+add``) and nothing else (their
reductions differ): ``l2_gemm_logsumexp_relu`` at 64x512x512, then ``l2_gemm_max_subtract_gelu``
at 128x512x512 — nearby sizes, so the lessons come from another bucket (at the files' own
256x1024x1024 a naive-GEMM point costs minutes to judge on this host: ``--first-set``/``--second-set``).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import sys
import tempfile
import time
from pathlib import Path

from bench.measure import Table, best_so_far, evals_to
from bench.searchers import swarm_trace
from bench.swarm_bench import compare
from kernels.targets.cpu import cpu_fingerprint
from swarm.knowledge import InMemoryKnowledge, groups

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ROOT / "bench" / "ownops" / "problems"


def with_constants(source: str, text: str) -> str:
    """The problem file with module constants set (``batch_size=64,in_features=512``): the
    same problem at other sizes, written as a user would edit it."""
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, value = part.partition("=")
        source, n = re.subn(rf"^{re.escape(name.strip())}\s*=.*$", f"{name.strip()} = {int(value)}", source,
                            count=1, flags=re.M)
        if not n:
            raise SystemExit(f"no module constant {name.strip()!r} to set")
    return source


def _import(path: Path, constants: str, name: str) -> str:
    from kernels.graph import service
    res = service.import_problem(with_constants(path.read_text(), constants), name=name)
    if not res.ok:
        raise SystemExit(f"{path}: not imported: {res.failure}")
    return name


def _shared(first: str, second: str) -> list[str]:
    from kernels import workloads
    keys = {groups.signature_key(g["signature"]): groups.describe(g["signature"]) for g in workloads.get(first).groups}
    return sorted({keys[k] for k in (groups.signature_key(g["signature"]) for g in workloads.get(second).groups)
                   if k in keys})


def point_quality(traces: dict) -> dict:
    """How good the points each kind of run spent its budget on were (first measurements):
    the median score and how many reached 1x, over all seeds."""
    import statistics
    out = {}
    for kind in ("warm", "cold"):
        scores = [sc for runs in traces.values() for _, sc in runs[kind]]
        out[kind] = {"n": len(scores), "median": statistics.median(scores) if scores else 0.0,
                     "at_least_1x": sum(1 for sc in scores if sc >= 1.0)}
    return out


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(prog="python -m bench group-lessons", description=__doc__.split("\n\n")[0])
    ap.add_argument("--first", type=Path, default=PROBLEMS / "l2_gemm_logsumexp_relu.py")
    ap.add_argument("--second", type=Path, default=PROBLEMS / "l2_gemm_max_subtract_gelu.py")
    ap.add_argument("--first-set", default="batch_size=64,in_features=512,out_features=512",
                    help="module constants of the first problem (sized so that a search fits in minutes here)")
    ap.add_argument("--second-set", default="batch_size=128,in_features=512,out_features=512",
                    help="module constants of the second problem")
    ap.add_argument("--budget", type=int, default=16, help="evaluations of the cold run on the first problem")
    ap.add_argument("--second-budget", type=int, default=8, help="evaluations of each run on the second problem")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--min-calls", type=int, default=10)
    ap.add_argument("--quick", action="store_true", help="one seed, budgets 8 and 4 (a smoke run)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.quick:
        args.seeds, args.budget, args.second_budget = 1, 8, 4
    os.environ.setdefault("INT21_OPS_DIR", tempfile.mkdtemp(prefix="int21-group-lessons-"))
    t0 = time.monotonic()
    first = _import(args.first, args.first_set, f"{args.first.stem}_first")
    second = _import(args.second, args.second_set, f"{args.second.stem}_second")
    shared = _shared(first, second)
    print(f"{first} → {second}; group signatures in common: {', '.join(shared) or 'none'}", flush=True)
    if not shared:
        print("the two problems share no group signature: nothing to transfer", file=sys.stderr)
        return 2
    from kernels import workloads
    shape_of = {n: "x".join(str(v) for _, v in workloads.get(n).shapes.typical[0].dims) for n in (first, second)}
    t_first, t_second = Table(first, args.min_calls), Table(second, args.min_calls)
    traces = {}
    for seed in range(args.seeds):
        teacher = InMemoryKnowledge()
        print(f"seed {seed}: cold run on {first} ({args.budget} evaluations, records lessons)", flush=True)
        swarm_trace(t_first, shape_of[first], args.budget, 200 + seed, teacher, cold=True)
        group_lessons = [lsn for lsn in teacher.lessons if lsn.workload.startswith("group:")]
        print(f"seed {seed}: {len(group_lessons)} lessons by group signature; {second} with them, and cold",
              flush=True)
        traces[seed] = {"warm": swarm_trace(t_second, shape_of[second], args.second_budget, 300 + seed, teacher,
                                            cold=False),
                        "cold": swarm_trace(t_second, shape_of[second], args.second_budget, 300 + seed,
                                            InMemoryKnowledge(), cold=True)}
    print(f"confirming the top points of {second}", flush=True)
    confirmations = t_second.confirm(shape_of[second])
    curves = {seed: {kind: best_so_far([t_second.score(shape_of[second], p, default=sc) for p, sc in trace])
                     for kind, trace in runs.items()} for seed, runs in traces.items()}
    at = compare(curves, args.second_budget)
    reach = {seed: evals_to(c["warm"], c["cold"][-1]) for seed, c in curves.items()}
    points = point_quality(traces)
    result = {
        "benchmark": "group-lessons", "command": " ".join(["python -m bench group-lessons", *argv]),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": cpu_fingerprint(), "first": first, "second": second, "shared_signatures": shared,
        "constants": {first: args.first_set, second: args.second_set},
        "shapes": shape_of, "budget": args.budget, "second_budget": args.second_budget, "seeds": args.seeds,
        "confirmation_evaluations": confirmations, "at": {str(k): v for k, v in at.items()},
        "warm_evaluations_to_cold_final_best": reach, "points": points, "curves": curves,
        "traces": {s: {k: [[p, sc] for p, sc in t] for k, t in r.items()} for s, r in traces.items()},
        "distinct_points_measured": t_first.evaluator_calls + t_second.evaluator_calls,
        "seconds": time.monotonic() - t0, "tables": {first: list(t_first.rows.values()),
                                                      second: list(t_second.rows.values())},
    }
    print(f"{second}, best speedup after N evaluations (confirmed scores, median over {args.seeds} seeds):")
    for n, row in at.items():
        print(f"  {n:>3}: with {first}'s lessons {row['warm_median']:.2f}x, cold {row['cold_median']:.2f}x "
              f"(seeds ahead / level / behind: {row['warm_ahead_seeds']} / {row['level_seeds']} / "
              f"{row['warm_behind_seeds']})")
    print("  evaluations with lessons to reach the cold run's final best: "
          + ", ".join(f"seed {s}: {v if v is not None else 'not reached'}" for s, v in reach.items()))
    for kind in ("warm", "cold"):
        print(f"  {kind}: median score of the points evaluated {points[kind]['median']:.2f}x, "
              f"{points[kind]['at_least_1x']} of {points[kind]['n']} at least 1x")
    out = args.out or ROOT / "bench" / "results" / f"group-lessons-{datetime.date.today()}-{platform.node() or 'host'}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, default=str))
    print(f"Wrote {out} ({result['distinct_points_measured']} distinct points measured, {result['seconds']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
