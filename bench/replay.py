"""Replay searchers against a stored landscape: a development aid for the search, not a
benchmark (nothing is measured; the figures in docs/benchmarks.md are).

    python -m bench replay bench/results/2026-11-29-vm.json [--workload softmax ...]
                           [--seeds 24] [--budget 50] [--searchers swarm_cold,random,optuna_tpe]

Every ``python -m bench peers`` result keeps its measurement table: each point any searcher
asked for, with its score. A replay answers a searcher's points from that table; a point
never measured there takes the mean score of its nearest measured neighbours (fewest
params different). A change to an agent or to the bandit is judged on many seeds in
seconds, before an hour of real measurement confirms it.

Per workload it prints, over the seeds: the mean best found after 16, 25 and the whole
budget as a share of the landscape's best, and the median evaluations to 95% of it
(random search gets three times the budget, so its figure is rarely cut off).
"""
from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from bench import searchers
from bench.measure import Table, best_so_far, evals_to
from swarm.knowledge import InMemoryKnowledge
from swarm.types import Result


class ReplayTable(Table):
    """The :class:`bench.measure.Table` seam, answered from a stored table."""

    def __init__(self, workload: str, shape: str, rows: list[dict]):
        super().__init__(workload, min_calls=0, log=None)
        self.rows = {self.key(shape, r["params"]): r for r in rows if r["shape"] == shape}
        if not self.rows:
            raise SystemExit(f"{workload}: no measured points at {shape} in this result")
        self.measured = list(self.rows.values())

    def measure(self, shape: str, source: str, params: dict) -> Result:
        k = self.key(shape, params)
        if k not in self.rows:
            dist = [(sum(1 for n, v in params.items() if r["params"].get(n) != v), r) for r in self.measured]
            nearest = min(d for d, _ in dist)
            near = [r for d, r in dist if d == nearest]
            score = statistics.mean(r["result"]["score"] for r in near)
            result = {**near[0]["result"], "score": score, "status": "ok" if score > 0 else near[0]["result"]["status"]}
            self.rows[k] = {"shape": shape, "params": params, "result": result}
        return Result(**self.rows[k]["result"])

    def remeasure(self, shape: str, params: dict, round: int) -> float:
        """Nothing is measured in a replay: a run confirming its best gets each point's stored
        measurement of that round where the table has one, its score otherwise."""
        row = self.rows[self.key(shape, params)]
        scores = row.get("scores") or []
        return scores[round] if round < len(scores) else row["result"]["score"]

    def best_score(self) -> float:
        return max(r["result"]["score"] for r in self.measured)


def replay(result: dict, workload: str, searcher: str, seeds: int, budget: int) -> dict:
    shape = result["search"][workload]["shape"]
    rows = result["table"][workload]
    best = ReplayTable(workload, shape, rows).best_score()
    e95, shares = [], {16: [], 25: [], budget: []}
    for seed in range(seeds):
        table = ReplayTable(workload, shape, rows)
        if searcher == "swarm_cold":
            trace = searchers.swarm_trace(table, shape, budget, seed, InMemoryKnowledge(), cold=True)
        else:
            trace = searchers.run_searcher(searcher, table, shape, budget * (3 if searcher == "random" else 1),
                                           seed, teacher=None)
        curve = best_so_far([s for _, s in trace])
        e95.append(evals_to(curve, 0.95 * best))
        for at in shares:
            shares[at].append(curve[min(at, len(curve)) - 1] / best if curve else 0.0)
    return {"workload": workload, "shape": shape, "searcher": searcher, "best": best,
            "share_of_best": {at: statistics.mean(v) for at, v in shares.items()},
            "median_evals_to_95pct": statistics.median([e if e is not None else float("inf") for e in e95]),
            "never": e95.count(None)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench replay", description=__doc__.split("\n\n")[0])
    ap.add_argument("result", help="a bench result JSON (bench/results/*.json) with its table")
    ap.add_argument("--workload", action="append", help="default: every workload searched in that result")
    ap.add_argument("--seeds", type=int, default=24)
    ap.add_argument("--budget", type=int, default=50)
    ap.add_argument("--searchers", default="swarm_cold,random")
    args = ap.parse_args(argv)
    try:
        result = json.loads(Path(args.result).read_text())
    except (OSError, ValueError) as exc:
        ap.error(f"cannot read {args.result}: {exc}")
    if not result.get("table") or not result.get("search"):
        ap.error(f"{args.result} has no search section with a measurement table")
    names = args.workload or list(result["search"])
    unknown = [w for w in names if w not in result["search"]]
    if unknown:
        ap.error(f"not searched in this result: {', '.join(unknown)}; it has {', '.join(result['search'])}")
    chosen = [s.strip() for s in args.searchers.split(",") if s.strip()]
    bad = [s for s in chosen if s not in searchers.SEARCHERS or s == "swarm_warm"]
    if bad:
        ap.error(f"cannot replay {bad}; choose from {[s for s in searchers.SEARCHERS if s != 'swarm_warm']}")
    import logging
    import warnings
    logging.disable(logging.WARNING)
    warnings.filterwarnings("ignore")
    print(f"{'workload':10} {'searcher':22} {'at 16':>7} {'at 25':>7} {'at ' + str(args.budget):>7} "
          f"{'evals to 95%':>13} {'never':>6}")
    for w in names:
        for s in chosen:
            r = replay(result, w, s, args.seeds, args.budget)
            sh = r["share_of_best"]
            e = r["median_evals_to_95pct"]
            print(f"{w:10} {s:22} {sh[16]:7.3f} {sh[25]:7.3f} {sh[args.budget]:7.3f} "
                  f"{'never' if e == float('inf') else f'{e:g}':>13} {r['never']:>3}/{args.seeds}", flush=True)
    return 0
