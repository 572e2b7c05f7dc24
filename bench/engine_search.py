"""The engine-level search, measured (a benchmark, not a test): how fast the swarm finds a
good engine against random search over the same space, and how much a second model that
shares the first's group signatures gains from the first's lessons.

    python -m bench engine-search [--model SPEC] [--second SPEC] [--phase decode|prefill]
                                  [--budget 24] [--random-budget 48] [--seeds 2]
                                  [--second-budget 16] [--tiny] [--out FILE]

The first model (default: the issue's decoder, hidden 1024, 16 heads over 4 K/V heads, FFN
2816, 4 layers, vocabulary 8192) is imported as an engine (kernels.engine.service.engine_import)
into a store of this run's own, and one phase of it (default decode after 128, a few seconds
per evaluation; prefill costs several times that) is searched. Its design space is the
phase's: every fusion group's knobs plus the fusion bits. Every point any searcher asks for is
judged and timed once by the real harness (correctness at every shape against the float64
interpreter, then timing interleaved with the model in torch eager) and kept in a table
(``bench.measure.Table``), so the searchers are scored by the same measurements; the top
points are measured again and scored by their median before any figure is taken.

Search efficiency, per seed: a cold swarm run (``--budget`` evaluations) and random search
(``--random-budget``) over the same space; the evaluations each needs to reach 95% of the
best known score. The issue's bar: the swarm in <= 1/3 of random search's evaluations.

Transfer: the second model (default: the same decoder with 2 layers, so every group signature
is shared) is searched per seed twice at equal budget (``--second-budget``): with the lessons
the first model's cold run recorded (whole-program lessons projected onto each group's
signature key: ``swarm.knowledge.groups``) and cold. Reported: the evaluations each needs to
reach the first model's confirmed engine-level speedup (and, where the cold run never gets
there, the warm run's evaluations to the cold run's final best). The issue's bar: <= 25% of
the cold run's evaluations.

With ``--tune-groups N`` every swarm run on either model except the one with lessons starts as
``manage.py engine run --tune-groups N`` does: each distinct fusion group tuned alone at N
points (``kernels.engine.tune``), the composed point recorded as lessons
(``swarm.knowledge.groups.tuned``) where the run's seeded agent starts. The group evaluations
count in that run's evaluations, as they do in the product, though each costs one group, not
the whole model. The second model with the first's lessons is not tuned: its groups' knobs
come from the signature lessons. A second target is reported beside the literal one: the
first model's gain over its own defaults, applied to the second model's defaults (a model
with other layers starts elsewhere against torch; where its defaults already beat the first's
best speedup, the literal target measures nothing). ``--random-budget 0`` skips random search.

Writes bench/results/engine-search-<date>-<host>[-tiny].json with the tables and traces.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from bench.engine_bench import BENCH_MODEL, TINY_MODEL  # noqa: E402
from bench.measure import Table, best_so_far, evals_to  # noqa: E402
from bench.searchers import random_trace, swarm_trace  # noqa: E402


def second_model(first: str) -> str:
    """The first spec with half its layers (at least 1): the same groups, another engine."""
    parts = dict(p.split("=", 1) for p in first.split(","))
    parts["layers"] = str(max(1, int(parts.get("layers", "2")) // 2))
    return ",".join(f"{k}={v}" for k, v in parts.items())


def _import(spec: str, name: str, phase: str, length: int, max_seq: int) -> tuple[str, str]:
    """Import ``spec`` as engine ``name``; (the phase's workload, its typical shape's text)."""
    from kernels import workloads
    from kernels.engine import service
    model = service.model_from(spec, max_seq=max_seq)
    t0 = time.monotonic()
    print(f"importing {name} ({spec}) ...", flush=True)
    record = service.engine_import(model, name=name, prefill_seq=[length], decode_past=[length])
    wl_name = record["phases"][phase]["workload"]
    wl = workloads.get(wl_name)
    label = wl.shapes.typical[0].label()
    print(f"  {time.monotonic() - t0:.0f}s; {phase} at {label}: {len(wl.template('cpu').space.names)} knobs",
          flush=True)
    return wl_name, ""   # the table's shape: the phase's typical one


def _med(xs, budget_cap=None):
    """Median with 'never' counted as past the budget (None stays None when most never got there)."""
    vals = [x if x is not None else float("inf") for x in xs]
    m = statistics.median(vals) if vals else float("inf")
    return None if m == float("inf") else m


def _short(line: str, **kw) -> None:
    """The table's log, one short line per measurement (an engine point has hundreds of knobs)."""
    head, arrow, tail = line.partition(" → ")
    print((head[:90] + " … → " + tail) if arrow and len(head) > 90 else line, **kw)


def _curve(table: Table, shape: str, trace) -> list[float]:
    return best_so_far([table.score(shape, p, default=sc) for p, sc in trace])


def _plus(offset: int, evals: int | None) -> int | None:
    return None if evals is None else offset + evals


def _tune(engine: str, phase: str, per_group: int, seed: int, knowledge) -> dict:
    """Every distinct group of the phase tuned alone, its lessons recorded into ``knowledge``
    as the engine run records them; the tuning's report."""
    from kernels.engine import tune
    from swarm.knowledge import groups
    print(f"  tuning {engine}'s {phase} groups alone ({per_group} points each) ...", flush=True)
    report = tune.tune(engine, phase, per_group=per_group, seed=seed)
    for lesson in groups.tuned(report, "bench"):      # the bench engine's fingerprint
        knowledge.record(lesson)
    moved = sum(1 for r in report["groups"] if r["knobs"])
    print(f"  {report['evaluations']} group evaluations, {report['seconds']:.0f} s; {moved} of "
          f"{len(report['groups'])} structures moved off their defaults", flush=True)
    return report


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(prog="python -m bench engine-search", description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", help=f"the first model, a decoder family spec (default {BENCH_MODEL})")
    ap.add_argument("--second", help="the second model (default: the first with half its layers)")
    ap.add_argument("--phase", choices=("decode", "prefill"), default="decode")
    ap.add_argument("--length", type=int, default=None, help="decode's cache length or prefill's sequence (128)")
    ap.add_argument("--budget", type=int, default=24, help="evaluations of each swarm run on the first model")
    ap.add_argument("--random-budget", type=int, default=None, help="evaluations of each random search (2 x budget)")
    ap.add_argument("--second-budget", type=int, default=16, help="evaluations of each run on the second model")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--min-calls", type=int, default=10)
    ap.add_argument("--check-seeds", type=int, default=1, help="correctness seeds per evaluation")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tune-groups", type=int, default=0, metavar="N",
                    help="start each run (but the one with lessons) by tuning every group alone at N points")
    ap.add_argument("--tiny", action="store_true", help="a dry run on a small model (minutes)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    first_spec = args.model or (TINY_MODEL if args.tiny else BENCH_MODEL)
    second_spec = args.second or second_model(first_spec)
    length = args.length or (16 if args.tiny else 128)
    random_budget = 2 * args.budget if args.random_budget is None else args.random_budget
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    ops = Path(tempfile.mkdtemp(prefix="bench-engine-search-"))
    ops.chmod(0o755)                      # the harness's children (other uids) read the stored problems
    os.environ["INT21_OPS_DIR"] = str(ops)
    from kernels.targets.cpu import cpu_fingerprint
    from kernels.workloads import get as workloads_get
    from swarm.knowledge import InMemoryKnowledge

    t0 = time.monotonic()
    max_seq = 64 if args.tiny else 2048
    first, shape1 = _import(first_spec, "search_first", args.phase, length, max_seq)
    second, shape2 = _import(second_spec, "search_second", args.phase, length, max_seq)
    settings = {"seeds": args.check_seeds}
    t1, t2 = (Table(wl, args.min_calls, settings=settings, log=_short) for wl in (first, second))
    tune_n = args.tune_groups
    # the defaults of both, measured once (a swarm run that tries them again reads the table)
    defaults = {}
    for wl_name, table, shape in ((first, t1, shape1), (second, t2, shape2)):
        tpl = workloads_get(wl_name).template("cpu")
        src, point = tpl.seeds()[0]
        print(f"{wl_name}: its defaults", flush=True)
        table.measure(shape, src, point)
        defaults[wl_name] = point

    # ---- search efficiency on the first model
    traces, teachers, offsets, tuned = {}, {}, {}, {}
    for seed in range(args.seeds):
        teachers[seed] = InMemoryKnowledge()
        offsets[seed] = {"swarm": 0, "random": 0}
        if tune_n:
            tuned[seed] = {"first": _tune("search_first", args.phase, tune_n, seed, teachers[seed])}
            offsets[seed]["swarm"] = tuned[seed]["first"]["evaluations"]
        print(f"seed {seed}: swarm, {'from the tuned groups' if tune_n else 'cold'} ({args.budget} evaluations; "
              "records lessons)", flush=True)
        swarm = swarm_trace(t1, shape1, args.budget, seed, teachers[seed], cold=not tune_n)
        traces[seed] = {"swarm": swarm}
        if random_budget:
            print(f"seed {seed}: random search ({random_budget} evaluations)", flush=True)
            traces[seed]["random"] = random_trace(t1, shape1, random_budget, seed)
    print(f"confirming the top points of {first}", flush=True)
    confirmed1 = t1.confirm(shape1)
    curves1 = {s: {k: _curve(t1, shape1, t) for k, t in runs.items()} for s, runs in traces.items()}
    best_known = max(r["result"]["score"] for r in t1.rows.values() if r["result"]["status"] == "ok")
    target = 0.95 * best_known
    eff = {k: {s: _plus(offsets[s][k], evals_to(c[k], target)) for s, c in curves1.items() if k in c}
           for k in ("swarm", "random")}
    med_swarm, med_random = _med(eff["swarm"].values()), _med(eff["random"].values())
    ratio = (med_swarm / med_random) if med_swarm and med_random else None
    # where random never got there, its evaluations are at least its budget: the ratio is a bound
    ratio_bound = (med_swarm / random_budget) if med_swarm and random_budget and med_random is None else None

    # ---- transfer to the second model
    first_best = {s: max(c["swarm"]) if c["swarm"] else 0.0 for s, c in curves1.items()}
    traces2 = {}
    for seed in range(args.seeds):
        print(f"seed {seed}: {second} with {first}'s lessons, and cold ({args.second_budget} evaluations each)",
              flush=True)
        group_lessons = sum(1 for lsn in teachers[seed].lessons if lsn.workload.startswith("group:"))
        warm = swarm_trace(t2, shape2, args.second_budget, 300 + seed, teachers[seed], cold=False)
        own = InMemoryKnowledge()
        if tune_n:
            tuned[seed]["second_cold"] = _tune("search_second", args.phase, tune_n, seed, own)
            offsets[seed]["cold"] = tuned[seed]["second_cold"]["evaluations"]
        cold = swarm_trace(t2, shape2, args.second_budget, 300 + seed, own, cold=not tune_n)
        traces2[seed] = {"warm": warm, "cold": cold, "group_lessons": group_lessons}
    print(f"confirming the top points of {second}", flush=True)
    confirmed2 = t2.confirm(shape2)
    curves2 = {s: {k: _curve(t2, shape2, runs[k]) for k in ("warm", "cold")} for s, runs in traces2.items()}
    # the first model's gain over its own defaults, applied to the second's defaults
    default1, default2 = t1.score(shape1, defaults[first]), t2.score(shape2, defaults[second])
    gain1 = {s: (b / default1) if default1 else None for s, b in first_best.items()}
    reach = {}
    for s, c in curves2.items():
        off = offsets[s].get("cold", 0)
        relative = default2 * gain1[s] if gain1[s] else None
        r = {"target": first_best[s], "warm": evals_to(c["warm"], first_best[s]),
             "cold": _plus(off, evals_to(c["cold"], first_best[s])),
             "warm_to_cold_final": evals_to(c["warm"], c["cold"][-1]) if c["cold"] else None,
             "relative_target": relative, "first_gain_over_defaults": gain1[s],
             "warm_relative": evals_to(c["warm"], relative) if relative else None,
             "cold_relative": _plus(off, evals_to(c["cold"], relative)) if relative else None,
             "cold_evaluations_before_its_search": off}
        r["fraction"] = (r["warm"] / r["cold"]) if r["warm"] and r["cold"] else None
        r["fraction_relative"] = (r["warm_relative"] / r["cold_relative"]) \
            if r["warm_relative"] and r["cold_relative"] else None
        reach[s] = r

    result = {
        "benchmark": "engine-search", "command": " ".join(["python -m bench engine-search", *argv]),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": cpu_fingerprint(), "threads": args.threads, "phase": args.phase, "length": length,
        "first": {"model": first_spec, "workload": first, "shape": shape1},
        "second": {"model": second_spec, "workload": second, "shape": shape2},
        "budget": args.budget, "random_budget": random_budget, "second_budget": args.second_budget,
        "seeds": args.seeds, "tune_groups": tune_n, "tuned": tuned, "evaluations_before_search": offsets,
        "defaults_score": {first: default1, second: default2},
        "search_efficiency": {"best_known": best_known, "target_95pct": target, "evals_to_target": eff,
                              "median_swarm": med_swarm, "median_random": med_random,
                              "ratio_swarm_over_random": ratio, "ratio_at_most": ratio_bound,
                              "confirmation_evaluations": confirmed1},
        "transfer": {"first_best": first_best, "reach": reach, "confirmation_evaluations": confirmed2},
        "curves": {"first": curves1, "second": curves2},
        "traces": {"first": {s: {k: [[p, sc] for p, sc in t] for k, t in r.items()} for s, r in traces.items()},
                   "second": {s: {k: [[p, sc] for p, sc in r[k]] for k in ("warm", "cold")}
                              for s, r in traces2.items()}},
        "distinct_points_measured": t1.evaluator_calls + t2.evaluator_calls,
        "seconds": round(time.monotonic() - t0, 1),
        "tables": {first: list(t1.rows.values()), second: list(t2.rows.values())},
    }
    print(f"\n{first} {args.phase} at {shape1}: best known {best_known:.2f}x over torch eager "
          f"(confirmed); 95% of it: {target:.2f}x")
    print(f"  evaluations to 95% of the best: swarm {eff['swarm']}, random {eff['random']}")
    if not random_budget:
        print("  random search not run (--random-budget 0)")
    elif ratio is not None:
        print(f"  median swarm / median random: {ratio:.2f} (bar: <= 0.33)")
    elif ratio_bound is not None:
        print(f"  random search did not get there in {random_budget}: the ratio is at most {ratio_bound:.2f}")
    else:
        print("  the swarm's median run did not get there within its budget")
    print(f"defaults: {first} {default1:.2f}x, {second} {default2:.2f}x over torch eager")
    print(f"{second}: evaluations to reach the first model's engine-level speedup, with lessons / cold"
          + (f" (cold: {tune_n} points per group tuned first, counted)" if tune_n else "") + ":")
    for s, r in reach.items():
        print(f"  seed {s}: target {r['target']:.2f}x; with lessons {r['warm']}, cold {r['cold']}"
              + (f" (fraction {r['fraction']:.2f}; bar <= 0.25)" if r["fraction"] is not None else "")
              + f"; with lessons to the cold run's final best: {r['warm_to_cold_final']}")
        if r["relative_target"]:
            print(f"    the first's gain over its defaults ({r['first_gain_over_defaults']:.3f}x) on the second's: "
                  f"{r['relative_target']:.2f}x; with lessons {r['warm_relative']}, cold {r['cold_relative']}"
                  + (f" (fraction {r['fraction_relative']:.2f})" if r["fraction_relative"] is not None else ""))
    out = args.out or ROOT / "bench" / "results" / (
        f"engine-search-{datetime.date.today()}-{platform.node().split('.')[0] or 'host'}"
        f"{'-tiny' if args.tiny else ''}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, default=str) + "\n")
    print(f"wrote {out} ({result['distinct_points_measured']} distinct points measured, {result['seconds']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
