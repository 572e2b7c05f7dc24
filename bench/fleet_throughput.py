"""Fleet throughput: evaluations per minute with 1 and 2 CPU worker processes, and the
orchestration overhead per evaluation (time not spent inside the evaluator). Not a test.

Each configuration gets a fresh production-mode stack (its own PostgreSQL database, a Redis
key prefix, `celery worker` processes: N on target.cpu with -c 1, one on orchestrate) and one
run whose single generation is a batch of cheap candidates (softmax 64x1024, 2 seeds, a short
timing budget), all queued at once.

- throughput: candidates / (last finish - first claim), per minute;
- overhead of an evaluation: from the moment its worker could take it (the previous finish on
  that worker, or when the candidate was queued) to the moment the orchestrator recorded the
  result, minus the seconds inside the evaluator. It holds the broker round trip, the task's
  Django work (claim, heartbeat thread, conditional finish) and the orchestrator's polling and
  recording (result, events).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/test REDIS_URL=redis://127.0.0.1:6379/0 \\
        .venv/bin/python -m bench fleet [--batch 24] [--repeats 2] [--out FILE]      (make bench-fleet)
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "fleet"))   # the tests' production-mode stack, driven from outside

from fleet_stack import FAST_EVAL, Stack, drop_template  # noqa: E402


def one(workers: int, batch: int, tmp: Path) -> dict:
    # production delivery settings (the tests' stack beats every 0.5 s to notice deaths quickly)
    with Stack(tmp, env={"INT21_EVAL_HEARTBEAT": "5", "INT21_EVAL_STALE": "30", "INT21_WORKER_HEARTBEAT": "2",
                         "INT21_WORKER_STALE": "7", "INT21_DRIVE_LEASE": "60", "INT21_RECOVER_EVERY": "30"}) as s:
        names = [f"cpu{i}" for i in range(1, workers + 1)]
        for n in names:
            s.worker(n, "target.cpu")
        s.worker("orch", "orchestrate")
        s.wait_workers(*names, "orch")
        load_before = os.getloadavg()
        run_id = s.launch(budget=batch, population=batch, eval_settings=FAST_EVAL)
        s.wait_finished(run_id, timeout=1800, watch=[*names, "orch"])
        load_after = os.getloadavg()
        s.assert_each_candidate_evaluated_once(run_id, budget=batch)
        rows = s.sql(
            "select e.worker, extract(epoch from e.started_at), extract(epoch from e.finished_at), e.evaluator_seconds, "
            "extract(epoch from c.created_at), extract(epoch from c.evaluated_at) from runs_evaluation e "
            "join runs_candidate c on c.id = e.candidate_id where c.run_id = %s and e.finished_at is not null "
            "order by e.started_at", run_id)
    rows = [(w, float(a), float(b), float(sec), float(q), float(r)) for w, a, b, sec, q, r in rows]
    first, last = min(r[1] for r in rows), max(r[2] for r in rows)
    overheads, previous, parts = [], {}, {"to_claim": [], "claim_to_finish": [], "finish_to_record": []}
    for worker, started, finished, seconds, queued, recorded in rows:
        ready = max(queued, previous.get(worker, queued))
        overheads.append(recorded - ready - seconds)
        parts["to_claim"].append(started - ready)                       # broker, task start
        parts["claim_to_finish"].append(finished - started - seconds)   # the task's own work
        parts["finish_to_record"].append(recorded - finished)           # the orchestrator's poll + record
        previous[worker] = finished
    overheads.sort()
    inside = sorted(r[3] for r in rows)
    return {
        "workers": workers, "evaluations": len(rows), "wall_seconds": round(last - first, 3),
        "evaluations_per_minute": round(len(rows) / (last - first) * 60, 2),
        "per_worker": {w: sum(1 for r in rows if r[0] == w) for w in sorted({r[0] for r in rows})},
        "evaluator_seconds_p50": round(statistics.median(inside), 3),
        "overhead_ms_p50": round(1000 * statistics.median(overheads), 1),
        "overhead_ms_p90": round(1000 * overheads[int(0.9 * (len(overheads) - 1))], 1),
        "overhead_ms_max": round(1000 * overheads[-1], 1),
        "overhead_parts_ms_p50": {k: round(1000 * statistics.median(v), 1) for k, v in parts.items()},
        "loadavg_before": [round(x, 2) for x in load_before], "loadavg_after": [round(x, 2) for x in load_after],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench fleet", description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=24, help="candidates in the batch (one generation)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / f"fleet-throughput-{date.today()}-vm.json"))
    args = ap.parse_args(argv)
    results = []
    try:
        for rep in range(args.repeats):
            for workers in (1, 2):
                with tempfile.TemporaryDirectory(prefix="int21-fleet-bench-") as tmp:
                    r = one(workers, args.batch, Path(tmp))
                r["repeat"] = rep
                results.append(r)
                print(json.dumps(r), flush=True)
    finally:
        drop_template()
    best = {w: max(r["evaluations_per_minute"] for r in results if r["workers"] == w) for w in (1, 2)}
    med = {w: statistics.median(r["evaluations_per_minute"] for r in results if r["workers"] == w) for w in (1, 2)}
    summary = {
        "host": {"cpus": os.cpu_count(), "machine": platform.machine(), "python": platform.python_version()},
        "batch": args.batch, "eval_settings": FAST_EVAL, "workload": "softmax 64x1024 on cpu",
        "ratio_2_over_1_median": round(med[2] / med[1], 3), "ratio_2_over_1_best": round(best[2] / best[1], 3),
        "overhead_ms_p50_all": round(statistics.median(r["overhead_ms_p50"] for r in results), 1),
        "runs": results,
    }
    Path(args.out).write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k != "runs"}, indent=1))
    return 0
