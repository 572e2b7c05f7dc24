"""python manage.py swarm --workload W --target T [--shape RxC ...] [--budget N] [--agents a,b]
[--seed S] [--cold] [--confirm N] [--json] | --resume RUN_ID"""
import json
import sys

from django.core.management.base import BaseCommand, CommandError

from int21web.runs import models as m
from int21web.runs import services
from int21web.runs.embedded import embedded_worker, serving
from int21web.runs.forms import eval_settings_from_text
from swarm.goals import GoalError
from swarm.progress import RunProgress
from swarm.types import Budget, Goal


class Command(BaseCommand):
    help = ("Run the swarm on one goal through the same Celery path the web app uses (an embedded "
            "worker unless a broker is configured), with a live progress bar.")

    def add_arguments(self, parser):
        parser.add_argument("--workload")
        parser.add_argument("--target", default="cpu")
        parser.add_argument("--shape", action="append", default=[], help="shapes that count, e.g. 4096x4096")
        parser.add_argument("--budget", type=int, default=200, help="evaluations (default 200)")
        parser.add_argument("--agents", default="explorer,mutator,crossover,tuner,variant,seeded")
        parser.add_argument("--population", type=int, default=8, help="candidates per generation")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--cold", action="store_true", help="ignore lessons from earlier runs")
        parser.add_argument("--target-speedup", type=float, help="stop once this speedup is reached")
        parser.add_argument("--wall-seconds", type=float, help="stop after this much run time")
        parser.add_argument("--stagnation", type=int, default=10, help="stop after N generations without gain")
        parser.add_argument("--confirm", type=int, default=3, metavar="N",
                            help="re-measure the best N twice more before the run ends and rank them by the "
                                 "median (default 3; 0: off)")
        parser.add_argument("--eval-settings", metavar="JSON", default="",
                            help='harness settings as a JSON object, as a goal\'s "evaluation settings" field '
                                 'holds them, e.g. \'{"seeds": 8}\' (they may only tighten the defaults, '
                                 'unless this host chose the fast floor: docs/harness.md)')
        parser.add_argument("--resume", type=int, metavar="RUN_ID", help="resume an interrupted run")
        parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")

    def handle(self, *args, **o):
        if o["resume"]:
            run = m.Run.objects.filter(pk=o["resume"]).first()
            if run is None:
                raise CommandError(f"no run {o['resume']}", returncode=2)
            budget = run.spec["budget"]["evaluations"]
            run_id, target = run.id, run.spec["target"]
            if run.state == "paused":
                services.run_resume(run_id=run_id, reason="resumed from the command line")
        else:
            if not o["workload"]:
                raise CommandError("--workload is required (or --resume RUN_ID)", returncode=2)
            try:
                eval_settings = eval_settings_from_text(o["eval_settings"])
            except ValueError as exc:
                raise CommandError(f"--eval-settings: {exc}", returncode=2) from None
            goal = Goal(workload=o["workload"], target=o["target"], shapes=o["shape"],
                        budget=Budget(evaluations=o["budget"], wall_seconds=o["wall_seconds"],
                                      target_speedup=o["target_speedup"], stagnation_generations=o["stagnation"]),
                        team=[a.strip() for a in o["agents"].split(",") if a.strip()],
                        population=o["population"], seed=o["seed"], cold=o["cold"], confirm_top=o["confirm"],
                        eval_settings=eval_settings)
            budget = o["budget"]
            run_id, target = None, o["target"]
        progress = RunProgress(sys.stderr, budget)
        why = serving(target)
        if why:
            raise CommandError(f"the swarm cannot evaluate: {why}", returncode=2)
        with embedded_worker():
            if run_id is None:
                try:
                    run_id = services.run_start(goal=goal, also=[progress])
                except GoalError as exc:
                    raise CommandError(str(exc), returncode=2)
                sys.stderr.write(f"run {run_id}: {goal.workload} on {goal.target}, budget {budget} evaluations\n")
            services.run_drive(run_id=run_id, also=[progress])
        summary = run_summary(run_id)
        if o["json"]:
            sys.stdout.write(json.dumps(summary) + "\n")
        else:
            b = summary["best"]
            self.stdout.write(f"run {run_id}: {summary['state']} — {summary['reason']}")
            if b:
                ratios = ", ".join(f"{k} {v:.2f}x" for k, v in b["speedup"].items())
                n = len(b["measurements"])
                held = f"; score {b['score']:.2f}x, the median of {n} measurements" if n > 1 else ""
                self.stdout.write(f"best #{b['candidate_id']}: {b['median_ms']:.3f} ms ({ratios}{held})\n"
                                  f"  params {b['params']}")


def run_summary(run_id: int) -> dict:
    run = m.Run.objects.get(pk=run_id)
    history, best = [], 0.0
    for ev in m.Event.objects.filter(run=run, kind="candidate_evaluated").order_by("seq"):
        best = max(best, ev.data["score"] if ev.data["status"] == "ok" else 0.0)
        history.append(best)
    b = run.best
    return {
        "run_id": run.id,
        "state": run.state,
        "reason": run.finish_reason,
        "evaluations": m.Candidate.objects.filter(run=run, result__isnull=False).count(),
        "best": None if b is None else {"candidate_id": b.id, "params": b.params,
                                        "median_ms": (b.result or {}).get("median_ms"),
                                        "speedup": (b.result or {}).get("speedup", {}), "score": b.score,
                                        # every score measured for it once confirmed; score is their median
                                        "measurements": (b.result or {}).get("measurements", [])},
        "history": history,
        "allocation": [g.allocation for g in run.generations.order_by("index")],
        "llm": run.llm_usage or {},   # requests, tokens, cost… when LLM agents were in the team
    }

