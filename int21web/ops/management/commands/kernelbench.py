"""python manage.py kernelbench PATH... [--budget N] [--jobs 1] [--json] [--out FILE] --as USER

Imports a batch of KernelBench-format problem files (files, or folders of them), runs a goal
for each (the same swarm, harness and stores as the web app), and prints and stores a
KernelBench-style table. ``--json`` prints exactly one JSON object on stdout:
``{"problems": [{"name", "supported", "reason", "correct", "speedup_eager", "speedup_compile",
"evaluations", "minutes"}], "summary": {"fast_0", "fast_1_eager", "fast_1_compile",
"geomean_eager"}}`` — fractions over the supported problems (fast_0: a correct kernel; fast_1:
a correct kernel faster than the baseline); the geometric mean over the correct ones.
"""
from __future__ import annotations

import datetime
import json
import math
import re
import sys
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from int21web.api.cli import add_user_arg, user
from int21web.ops import models as om
from int21web.ops import services
from swarm.progress import Bar


def problem_files(paths: list[str]) -> list[Path]:
    files = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            files += sorted(f for f in path.glob("*.py") if not f.name.startswith("_"))
        elif path.is_file():
            files.append(path)
        else:
            raise CommandError(f"{p}: no such file or folder", returncode=2)
    if not files:
        raise CommandError("no problem files given", returncode=2)
    return files


def name_for(path: Path) -> str:
    from kernels import workloads
    stem = re.sub(r"[^a-z0-9_]+", "_", path.stem.lower()).strip("_") or "problem"
    if not stem[0].isalpha():
        stem = f"kb_{stem}"
    stem = stem[:48]
    return f"kb_{stem}" if stem in workloads.WORKLOADS else stem


def summarize(rows: list[dict]) -> dict:
    supported = [r for r in rows if r["supported"]]
    n = len(supported)
    correct = [r for r in supported if r["correct"]]

    def frac(pred) -> float | None:
        return (sum(1 for r in supported if pred(r)) / n) if n else None
    speeds = [r["speedup_eager"] for r in correct if r["speedup_eager"]]
    return {
        "fast_0": frac(lambda r: r["correct"]),
        "fast_1_eager": frac(lambda r: r["correct"] and (r["speedup_eager"] or 0) > 1.0),
        "fast_1_compile": frac(lambda r: r["correct"] and (r["speedup_compile"] or 0) > 1.0),
        "geomean_eager": math.exp(sum(math.log(s) for s in speeds) / len(speeds)) if speeds else None,
        "problems": len(rows), "supported": n,
    }


class Command(BaseCommand):
    help = ("Import KernelBench-format problem files, run a goal for each, and print a KernelBench-style "
            "table (correct, speedup over torch eager and torch.compile) with fast_0, fast_1 and the geomean.")

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+", help="problem files, or folders of them")
        parser.add_argument("--budget", type=int, default=40, help="evaluations per problem (default 40)")
        parser.add_argument("--jobs", type=int, default=1,
                            help="problems imported at once (default 1); runs are timed one at a time, so "
                                 "no two timings share the cores")
        parser.add_argument("--population", type=int, default=8)
        parser.add_argument("--confirm", type=int, default=3, metavar="N",
                            help="re-measure each run's best N before it ends (default 3)")
        parser.add_argument("--no-compile", action="store_true",
                            help="leave torch.compile out; speedup_compile is then null")
        parser.add_argument("--json", action="store_true", help="print exactly one JSON object on stdout")
        parser.add_argument("--out", help="where to store the table as JSON (default var/kernelbench/…)")
        add_user_arg(parser, default="")

    def handle(self, *args, **o):
        if o["budget"] < 1 or o["jobs"] < 1:
            raise CommandError("--budget and --jobs must be at least 1", returncode=2)
        files = problem_files(o["paths"])
        from int21web.runs.embedded import serving
        why = serving("cpu")
        if why:
            raise CommandError(f"kernelbench cannot run its goals: {why}", returncode=2)
        actor = user(o["as_user"]) if o["as_user"] else None
        bar = Bar(sys.stderr, width=30)
        started = time.monotonic()
        imported = self._import_all(files, actor, o["jobs"], bar)
        rows = []
        for i, (path, name, refused) in enumerate(imported):
            bar.draw(i, len(files), f"{path.name}: {'running' if not refused else 'refused'} "
                                    f"· {time.monotonic() - started:5.0f}s", newline=not bar.tty)
            t0 = time.monotonic()
            if refused:
                rows.append({"name": path.stem, "supported": False, "reason": refused, "correct": False,
                             "speedup_eager": None, "speedup_compile": None, "evaluations": 0,
                             "minutes": round((time.monotonic() - t0) / 60, 2)})
                continue
            rows.append(self._run(name, o, actor, t0))
        bar.draw(len(files), len(files), f"done · {time.monotonic() - started:5.0f}s", newline=True)
        report = {"problems": rows, "summary": summarize(rows)}
        out = Path(o["out"]) if o["out"] else (Path(settings.VAR_DIR) / "kernelbench" /
                                               f"kernelbench-{datetime.datetime.now():%Y%m%d-%H%M%S}.json")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({**report, "command": " ".join(["manage.py", "kernelbench"] + sys.argv[2:]),
                                   "budget": o["budget"]}, indent=2))
        if o["json"]:
            sys.stdout.write(json.dumps(report) + "\n")
        else:
            self._table(report, out)

    def _import_all(self, files, actor, jobs, bar) -> list[tuple[Path, str, str | None]]:
        from concurrent.futures import ThreadPoolExecutor

        def one(path: Path):
            name = name_for(path)
            source = path.read_text(encoding="utf-8", errors="replace")
            existing = om.ImportedOp.objects.filter(name=name).first()
            if existing is not None and existing.source == source:
                return path, name, None
            if existing is not None:
                name = f"{name[:40]}_{abs(hash(source)) % 10**6:06d}"
            try:
                services.op_import(source=source, name=name, user=actor)
            except services.ImportRefused as exc:
                return path, name, exc.message
            return path, name, None
        out = []
        if jobs == 1:
            results = map(one, files)
        else:   # captures run in sandboxed processes: several at once is safe (nothing is timed yet)
            pool = ThreadPoolExecutor(max_workers=jobs)
            results = pool.map(one, files)
        for k, got in enumerate(results):
            bar.draw(k + 1, len(files), f"imported {got[0].name}", newline=not bar.tty)
            out.append(got)
        if bar.tty:
            sys.stderr.write("\n")
        return out

    def _run(self, name: str, o, actor, t0) -> dict:
        from int21web.runs import services as rs
        from int21web.runs.embedded import embedded_worker
        from int21web.runs.management.commands.swarm import run_summary
        from swarm.goals import GoalError
        from swarm.types import Budget, Goal
        # The search is timed against torch eager; torch.compile compiles the model again in every
        # timing session (~20 s here), so the best kernel is timed against it once, at the end,
        # side by side with eager in one session.
        goal = Goal(workload=name, target="cpu", budget=Budget(evaluations=o["budget"], stagnation_generations=6),
                    population=o["population"], confirm_top=o["confirm"])
        try:
            with embedded_worker(orchestrate=False):
                run_id = rs.run_start(goal=goal, started_by=actor)
                rs.run_drive(run_id=run_id)
        except GoalError as exc:
            return {"name": name, "supported": False, "reason": str(exc), "correct": False, "speedup_eager": None,
                    "speedup_compile": None, "evaluations": 0, "minutes": round((time.monotonic() - t0) / 60, 2)}
        s = run_summary(run_id)
        best = s["best"] or {}
        speed = best.get("speedup") or {}
        row = {"name": name, "supported": True, "reason": s["reason"], "correct": bool(best),
               "speedup_eager": speed.get("torch"), "speedup_compile": None,
               "evaluations": s["evaluations"], "minutes": None, "run_id": run_id}
        if best and not o["no_compile"]:
            from dataclasses import replace

            from int21web.runs import models as rm
            from swarm.judge import judge
            cand = rm.Candidate.objects.get(pk=best["candidate_id"])
            final, data = judge(replace(goal, eval_settings={"baselines": ["torch", "torch_compile"]}),
                                cand.source, cand.params)
            row["speedup_compile"] = final.speedup.get("torch_compile")
            row["final_session"] = {"status": final.status, "speedup": final.speedup, "notes": data.get("notes")}
            if final.status != "ok":
                row["correct"] = False
                row["reason"] = f"the final session against torch.compile: {final.reason}"
        row["minutes"] = round((time.monotonic() - t0) / 60, 2)
        return row

    def _table(self, report: dict, out: Path) -> None:
        fmt = lambda v: "—" if v is None else f"{v:.2f}x"   # noqa: E731
        self.stdout.write(f"{'problem':<34} {'supported':<9} {'correct':<7} {'vs eager':>9} {'vs compile':>10} "
                          f"{'evals':>5} {'min':>5}")
        for r in report["problems"]:
            self.stdout.write(f"{r['name'][:34]:<34} {'yes' if r['supported'] else 'no':<9} "
                              f"{'yes' if r['correct'] else 'no':<7} {fmt(r['speedup_eager']):>9} "
                              f"{fmt(r['speedup_compile']):>10} {r['evaluations']:>5} {r['minutes']:>5.1f}")
            if not r["supported"]:
                self.stdout.write(f"    {r['reason'][:200]}")
        s = report["summary"]
        pct = lambda v: "—" if v is None else f"{100 * v:.0f}%"   # noqa: E731
        self.stdout.write(f"fast_0 {pct(s['fast_0'])} · fast_1 vs eager {pct(s['fast_1_eager'])} · fast_1 vs "
                          f"compile {pct(s['fast_1_compile'])} · geomean vs eager {fmt(s['geomean_eager'])} "
                          f"({s['supported']} of {s['problems']} supported) → {out}")
