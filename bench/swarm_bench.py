"""Benchmark of the swarm (not a test): quality, search efficiency, self-improvement.

    python -m bench swarm [--workload softmax] [--shape 4096x4096] [--budget 200]
                          [--seeds 3] [--near 4096x2048] [--near-budget 25] [--quick]
                          [--only transfer]

Every point any searcher asks for is measured once by the real evaluator (the sandboxed
harness: correctness cases, then timing interleaved with the baselines) and kept in a
table for this run of the benchmark — Kernel Tuner's "simulation mode". Searchers then
replay against the same measurements, so they are compared on equal terms (same
evaluator, same noise), and a point measured for one searcher is not re-measured for
another. The table is written next to the results so the figures can be re-derived.

Reports, for the workload and shape:
- quality: the best kernel found, its speedup over each baseline (ratio of medians in
  one sandbox session) and its bandwidth as % of this host's STREAM copy, measured now;
- search efficiency: evaluations each searcher (swarm cold, random search) needs to
  reach 95% of the best-known score, per seed, and the median ratio;
- self-improvement: a second run with the first run's lessons vs a cold run, evaluations
  to reach the first run's final best;
- transfer: per seed, a cold run on this shape records its lessons; a run on the nearby
  shape with them and a cold run there, at equal budget, are compared by their best after
  5, 10 and --near-budget evaluations (the nearby shape's top points confirmed by repeated
  measurement first, so neither is credited with a lucky draw). `--only transfer` runs this
  part alone.
"""
from __future__ import annotations

import argparse
import datetime
import json
import platform
import statistics
import sys
import time
from pathlib import Path

from bench.measure import Table, best_so_far, evals_to  # shared with the peers report
from bench.searchers import random_run, swarm_run, swarm_trace
from kernels.harness.roofline import measure_cpu
from kernels.targets.cpu import cpu_fingerprint
from swarm.knowledge import InMemoryKnowledge

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(prog="python -m bench swarm", description=__doc__.split("\n\n")[0])
    ap.add_argument("--workload", default="softmax")
    ap.add_argument("--shape", default="4096x4096")
    ap.add_argument("--near", default="4096x2048", help="nearby shape for the transfer test")
    ap.add_argument("--budget", type=int, default=200)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--min-calls", type=int, default=20)
    ap.add_argument("--near-budget", type=int, default=None,
                    help="evaluations of each run on the nearby shape (default: budget / 4, at least 10)")
    ap.add_argument("--quick", action="store_true", help="budget 40, 2 seeds, small shapes")
    ap.add_argument("--only", choices=("all", "transfer"), default="all",
                    help="'transfer': only the nearby-shape comparison (lessons from --shape)")
    args = ap.parse_args(argv)
    if args.quick:
        args.budget, args.seeds, args.shape, args.near = 40, 2, "512x2048", "512x1024"
    near_budget = args.near_budget or max(10, args.budget // 4)
    table = Table(args.workload, args.min_calls)
    t0 = time.monotonic()
    ceilings = measure_cpu()  # in this run, for the % of bandwidth figure
    print(f"{args.workload} {args.shape}: host copy bandwidth {ceilings['copy_gbs']:.1f} GB/s, "
          f"peak {ceilings['peak_gflops']:.0f} GFLOP/s (measured now)", flush=True)

    result = {
        "benchmark": "swarm" if args.only == "all" else "swarm-transfer",
        "command": " ".join(["python -m bench swarm", *argv]),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": cpu_fingerprint(), "ceilings": ceilings,
        "workload": args.workload, "shape": args.shape, "budget": args.budget, "seeds": args.seeds,
    }
    if args.only == "all":
        result.update(_quality_efficiency_self_improvement(table, args))
    result["transfer"] = _transfer(table, args, near_budget)
    result.update(distinct_points_measured=table.evaluator_calls, seconds=time.monotonic() - t0,
                  table=list(table.rows.values()))
    tr = result["transfer"]
    print(f"Nearby shape {args.near} with lessons from {args.shape}, best after N evaluations "
          f"(median over {args.seeds} seeds, confirmed scores):")
    for n, row in tr["at"].items():
        print(f"  {n:>3}: with lessons {row['warm_median']:.2f}, cold {row['cold_median']:.2f} "
              f"({'ahead' if row['warm_median'] > row['cold_median'] else 'not ahead'}; seeds ahead / level / "
              f"behind: {row['warm_ahead_seeds']} / {row['level_seeds']} / {row['warm_behind_seeds']})")
    suffix = "" if args.only == "all" else "-transfer"
    out = ROOT / "bench" / "results" / f"swarm-{args.workload}{suffix}-{datetime.date.today()}-{platform.node() or 'host'}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(f"Wrote {out.relative_to(ROOT)} ({table.evaluator_calls} distinct points measured, "
          f"{result['seconds']:.0f} s)")


def _quality_efficiency_self_improvement(table, args) -> dict:
    curves = {"swarm": {}, "random": {}}
    for seed in range(args.seeds):
        print(f"  seed {seed}: swarm (cold)", flush=True)
        curves["swarm"][seed] = swarm_run(table, args.shape, args.budget, seed, InMemoryKnowledge(), cold=True)
        print(f"  seed {seed}: random search", flush=True)
        curves["random"][seed] = random_run(table, args.shape, args.budget, seed)
    best_known = max(r["result"]["score"] for r in table.rows.values() if r["shape"] == args.shape)
    target = 0.95 * best_known
    eff = {name: {s: evals_to(c, target) for s, c in per.items()} for name, per in curves.items()}

    # Self-improvement: lessons from one run, used by a second.
    knowledge = InMemoryKnowledge()
    print("  self-improvement: first run (records lessons)", flush=True)
    first = swarm_run(table, args.shape, args.budget, 100, knowledge, cold=False)
    print("  self-improvement: second run with lessons, and a cold run", flush=True)
    warm = swarm_run(table, args.shape, args.budget, 101, knowledge, cold=False)
    cold = swarm_run(table, args.shape, args.budget, 101, InMemoryKnowledge(), cold=True)

    best_row = max((r for r in table.rows.values() if r["shape"] == args.shape),
                   key=lambda r: r["result"]["score"])
    med = lambda xs: statistics.median([x if x is not None else float("inf") for x in xs])  # noqa: E731
    swarm_med, random_med = med(eff["swarm"].values()), med(eff["random"].values())
    out = {
        "quality": {"params": best_row["params"], "speedup": best_row["result"]["speedup"],
                    "median_ms": best_row["result"]["median_ms"], "timings": best_row["timings"],
                    "roofline": best_row["roofline"]},
        "search_efficiency": {"best_known": best_known, "target_95pct": target, "evals_to_target": eff,
                              "median_swarm": swarm_med, "median_random": random_med,
                              "ratio_swarm_over_random": swarm_med / random_med if random_med else None},
        "self_improvement": {"first_run_best": first[-1], "warm_evals_to_first_best": evals_to(warm, first[-1]),
                             "cold_evals_to_first_best": evals_to(cold, first[-1])},
        "curves": curves,
    }
    q = out["quality"]
    print(f"\nBest {args.workload} {args.shape}: {q['params']}\n  " +
          ", ".join(f"{k} {v:.2f}x" for k, v in q["speedup"].items()) +
          (f", {q['roofline'].get('pct_of_copy_bandwidth', 0):.0f}% of copy bandwidth" if q["roofline"] else ""))
    print(f"Evaluations to 95% of best ({target:.2f}): swarm {eff['swarm']}, random {eff['random']} "
          f"→ median ratio {out['search_efficiency']['ratio_swarm_over_random']}")
    si = out["self_improvement"]
    print(f"Second run with lessons reaches the first run's best ({si['first_run_best']:.2f}) after "
          f"{si['warm_evals_to_first_best']} evaluations; cold: {si['cold_evals_to_first_best']}")
    return out


def compare(curves: dict, near_budget: int) -> dict:
    """Best-so-far with lessons against cold after 5, 10 and near_budget evaluations: the
    medians over seeds, and in how many seeds the run with lessons was ahead, level, behind."""
    at = {}
    for n in sorted(x for x in {5, 10, near_budget} if x <= near_budget):
        pairs = [(c["warm"][min(n, len(c["warm"])) - 1], c["cold"][min(n, len(c["cold"])) - 1])
                 for c in curves.values() if c["warm"] and c["cold"]]
        warm, cold = [w for w, _ in pairs], [c for _, c in pairs]
        at[n] = {"warm": warm, "cold": cold, "warm_median": statistics.median(warm),
                 "cold_median": statistics.median(cold),
                 "warm_ahead_seeds": sum(1 for w, c in pairs if w > c),
                 "level_seeds": sum(1 for w, c in pairs if w == c),
                 "warm_behind_seeds": sum(1 for w, c in pairs if w < c)}
    return at


def _transfer(table, args, near_budget) -> dict:
    """Lessons from a cold run on --shape, used on --near, against a cold run there: the same
    seed, the same budget, every point scored by the same table."""
    traces = {}
    for seed in range(args.seeds):
        teacher = InMemoryKnowledge()
        print(f"  transfer seed {seed}: cold run on {args.shape} (records lessons)", flush=True)
        swarm_trace(table, args.shape, args.budget, 200 + seed, teacher, cold=True)
        print(f"  transfer seed {seed}: {args.near} with those lessons, and cold", flush=True)
        traces[seed] = {"warm": swarm_trace(table, args.near, near_budget, 300 + seed, teacher, cold=False),
                        "cold": swarm_trace(table, args.near, near_budget, 300 + seed, InMemoryKnowledge(), cold=True)}
    print(f"  confirming the top points on {args.near}", flush=True)
    confirmations = table.confirm(args.near)
    curves = {seed: {kind: best_so_far([table.score(args.near, p, default=sc) for p, sc in trace])
                     for kind, trace in runs.items()} for seed, runs in traces.items()}
    at = compare(curves, near_budget)
    return {"shape": args.shape, "near_shape": args.near, "teacher_budget": args.budget,
            "near_budget": near_budget, "confirmation_evaluations": confirmations, "at": at,
            "curves": curves, "traces": {s: {k: [[p, sc] for p, sc in t] for k, t in r.items()}
                                         for s, r in traces.items()}}


if __name__ == "__main__":
    main()
