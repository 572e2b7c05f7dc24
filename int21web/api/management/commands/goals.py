"""python manage.py goals list | show ID | space ID | create FILE --as USER | update ID FILE --as USER
| clone ID --as USER | validate FILE   (FILE: a goal's JSON body as the API takes it, or - for stdin)"""
from django.db import transaction

from int21web.accounts.roles import require
from int21web.api import cli, selectors
from int21web.api.routes.goals import goal_row
from int21web.api.schemas import GoalCheckIn, GoalIn, goal_of
from int21web.runs import services
from int21web.runs.store import goal_from
from swarm.goals import check_goal


class Command(cli.ApiCommand):
    help = "Saved goals, as the API and the goal editor see them (see docs/api.md for the JSON body)."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        ls = sub.add_parser("list", help="saved goals, newest first")
        ls.add_argument("--workload")
        ls.add_argument("--json", action="store_true")
        for name in ("show", "space"):
            sub.add_parser(name, help=f"{name} a goal as JSON").add_argument("goal_id", type=int)
        c = sub.add_parser("create", help="save a goal from a JSON file")
        c.add_argument("file")
        cli.add_user_arg(c)
        u = sub.add_parser("update", help="replace a goal from a JSON file")
        u.add_argument("goal_id", type=int)
        u.add_argument("file")
        cli.add_user_arg(u)
        k = sub.add_parser("clone", help="copy a goal")
        k.add_argument("goal_id", type=int)
        cli.add_user_arg(k)
        v = sub.add_parser("validate", help="check a goal file (no name needed); prints its design space's size")
        v.add_argument("file")

    def _handle(self, o):
        act = o["action"]
        if act == "list":
            rows = selectors.goals(workload=o["workload"])
            if o["json"]:
                return cli.emit(self.stdout, rows)
            for g in rows:
                s = g["spec"]
                self.stdout.write(f"{g['id']:>5}  {g['name']}  ({s['workload']} on {s['target']}, "
                                  f"{len(g['runs'])} run(s))")
        elif act == "show":
            cli.emit(self.stdout, selectors.goal_json(goal_row(o["goal_id"])))
        elif act == "space":
            space = services.space_of(goal_from(goal_row(o["goal_id"]).spec))
            cli.emit(self.stdout, {"space": space.to_json(), "space_size": space.size()})
        elif act == "validate":
            goal = goal_of(GoalCheckIn.model_validate(cli.read_json(o["file"])))
            check_goal(goal)
            space = services.space_of(goal)
            self.stdout.write(f"ok: {space.size():,} points in the design space")
        elif act == "create":
            who = cli.user(o["as_user"])
            require(who, "engineer", "creating a goal")
            payload = GoalIn.model_validate(cli.read_json(o["file"]))
            row = services.goal_save(name=payload.name, goal=goal_of(payload), owner=who,
                                     required_approvals=payload.required_approvals)
            self.stdout.write(f"goal {row.id} saved: {row.name}")
        elif act == "update":
            require(cli.user(o["as_user"]), "engineer", "editing a goal")
            payload = GoalIn.model_validate(cli.read_json(o["file"]))
            with transaction.atomic():
                row = services.goal_save(name=payload.name, goal=goal_of(payload), row=goal_row(o["goal_id"]),
                                         required_approvals=payload.required_approvals)
            self.stdout.write(f"goal {row.id} updated: {row.name}")
        elif act == "clone":
            who = cli.user(o["as_user"])
            require(who, "engineer", "cloning a goal")
            row = services.goal_clone(goal_row=goal_row(o["goal_id"]), owner=who)
            self.stdout.write(f"goal {row.id} saved: {row.name}")
