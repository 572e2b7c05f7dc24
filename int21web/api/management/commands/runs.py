"""python manage.py runs list | show ID | start GOAL_ID --as USER [--overrides JSON] | pause ID --as USER
| resume ID --as USER | stop ID --as USER | events ID [--after N] | candidates ID [--csv FILE]
(guidance: `manage.py guide`; a run from flags rather than a saved goal: `manage.py swarm`)"""
import sys

from django.conf import settings
from django.core.management.base import CommandError

from int21web.accounts.roles import require
from int21web.api import cli, selectors
from int21web.api.errors import strict_json
from int21web.api.routes.goals import goal_row
from int21web.api.routes.runs import control, run_row
from int21web.api.schemas import Overrides
from int21web.runs import services
from int21web.runs.store import goal_from


class Command(cli.ApiCommand):
    help = "Runs, as the API and the run page see them: start one from a saved goal, steer it, read it."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        ls = sub.add_parser("list", help="runs, newest first")
        ls.add_argument("--state", choices=["created", "running", "paused", "finished", "failed"])
        ls.add_argument("--json", action="store_true")
        sub.add_parser("show", help="a run as JSON: progress, best, agent stats").add_argument("run_id", type=int)
        st = sub.add_parser("start", help="start a run of a saved goal")
        st.add_argument("goal_id", type=int)
        st.add_argument("--overrides", default="", metavar="JSON", help="goal fields for this run only, e.g. "
                                                                        "'{\"seed\": 3}'")
        cli.add_user_arg(st)
        for name in ("pause", "resume", "stop"):
            p = sub.add_parser(name, help=f"{name} a run")
            p.add_argument("run_id", type=int)
            cli.add_user_arg(p)
        ev = sub.add_parser("events", help="stored events after a sequence number, one JSON line each")
        ev.add_argument("run_id", type=int)
        ev.add_argument("--after", type=int, default=0)
        cs = sub.add_parser("candidates", help="the run's candidates (one line each), or --csv FILE (- for stdout)")
        cs.add_argument("run_id", type=int)
        cs.add_argument("--csv", metavar="FILE")

    def _handle(self, o):
        act = o["action"]
        if act == "list":
            rows = selectors.runs(state=o["state"])
            if o["json"]:
                return cli.emit(self.stdout, rows)
            for r in rows:
                p, best = r["progress"], r["best"]
                self.stdout.write(f"{r['id']:>5}  {r['workload']} on {r['target']}  {r['state']:<8} "
                                  f"{p['evaluated']}/{p['budget']} evaluated"
                                  + (f"  best #{best['id']} score {best['score']:.3g}" if best else ""))
        elif act == "show":
            cli.emit(self.stdout, selectors.run_json(run_row(o["run_id"]), detail=True))
        elif act == "start":
            self._start(o)
        elif act in ("pause", "resume", "stop"):
            run = control(o["run_id"], act, cli.user(o["as_user"]))
            self.stdout.write(f"run {run.id}: {run.state}")
        elif act == "events":
            run_row(o["run_id"])
            after = max(0, o["after"])
            while True:
                page = selectors.events(o["run_id"], after=after)
                for e in page:
                    cli.emit_line(self.stdout, e)
                if len(page) < selectors.EVENT_PAGE:
                    break
                after = page[-1]["seq"]
        elif act == "candidates":
            run_row(o["run_id"])
            if o["csv"]:
                text = selectors.candidates_csv(o["run_id"])
                if o["csv"] == "-":
                    sys.stdout.write(text)
                else:
                    with open(o["csv"], "w", newline="") as f:
                        f.write(text)
                    self.stderr.write(f"{text.count(chr(10)) - 1} candidate(s) written to {o['csv']}")
                return
            for c in selectors.candidates(o["run_id"]):
                self.stdout.write(f"{c['id']:>6}  gen {c['generation']:>3}  {c['agent']:<10} {c['state']:<9} "
                                  f"{c['status'] or '-':<14} score {c['score']:.3g}  {c['params']}")

    def _start(self, o):
        who = cli.user(o["as_user"])
        require(who, "engineer", "starting a run")
        row = goal_row(o["goal_id"])
        overrides = None
        if o["overrides"]:
            try:
                data = strict_json(o["overrides"])
            except ValueError as exc:
                raise CommandError(f"--overrides: not JSON we can store: {exc}", returncode=2) from None
            overrides = Overrides.model_validate(data).model_dump(exclude_unset=True)
            if overrides.get("budget") is not None:
                overrides["budget"] = {**(row.spec.get("budget") or {}), **overrides["budget"]}
        if not settings.CELERY_EMBEDDED:
            run_id = services.run_launch(goal_row=row, started_by=who, overrides=overrides)
            self.stdout.write(f"run {run_id} started; its driver is queued for the orchestrate workers")
            return
        # Embedded mode: this process's broker ends with it, so the run is driven here, with the
        # embedded evaluation workers (what `manage.py swarm` does).
        from int21web.runs.embedded import embedded_worker
        from swarm.progress import RunProgress
        goal = goal_from({**row.spec, **(overrides or {})})
        progress = RunProgress(sys.stderr, goal.budget.evaluations)
        with embedded_worker():
            run_id = services.run_start(goal=goal, started_by=who, goal_row=row, also=[progress])
            self.stderr.write(f"run {run_id}: {goal.workload} on {goal.target}, driven here (embedded mode)")
            services.run_drive(run_id=run_id, also=[progress])
        run = run_row(run_id)
        self.stdout.write(f"run {run_id}: {run.state} — {run.finish_reason}")
