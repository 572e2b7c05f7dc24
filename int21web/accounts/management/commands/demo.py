"""python manage.py demo — the demo accounts and goals of embedded mode (`make run`)."""
from django.conf import settings
from django.contrib.auth.models import Group, User
from django.core.management.base import BaseCommand, CommandError

from int21web.accounts.roles import DESCRIPTIONS, ROLES
from int21web.runs import services

PASSWORD = "int21-demo"
DEMO_ENGINE = "demo_decoder"
DEMO_FAMILY = "hidden=64,heads=4,kv_heads=2,ffn=128,layers=2,vocab=256"


class Command(BaseCommand):
    help = ("Create the demo accounts (admin, engineer, reviewer, viewer; password int21-demo) and one demo "
            "goal per built-in workload. Embedded mode only: refused when DEBUG=false.")

    def add_arguments(self, parser):
        parser.add_argument("--quiet", action="store_true", help="do not print the accounts")
        parser.add_argument("--no-engine", action="store_true",
                            help="skip the demo engine (a tiny decoder: its import takes ~30 s the first time)")

    def handle(self, *args, **o):
        if not settings.EMBEDDED:
            raise CommandError("demo accounts exist only in embedded mode (DEBUG=true); this is production mode",
                               returncode=2)
        for role in ROLES:
            Group.objects.get_or_create(name=role)
        for role in ROLES:
            user, created = User.objects.get_or_create(username=role, defaults={"email": f"{role}@int21.invalid"})
            if created:
                user.set_password(PASSWORD)
                user.is_staff = user.is_superuser = role == "admin"
                user.save()
            user.groups.add(Group.objects.get(name=role))
        made = services.goal_demo_set(owner=User.objects.get(username="engineer"))
        engine_note = None if o["no_engine"] else self._demo_engine(User.objects.get(username="engineer"), made)
        if o["quiet"]:
            return
        self.stdout.write("Demo accounts (embedded mode only), password for each: " + PASSWORD)
        for role in ROLES:
            self.stdout.write(f"  {role:<9} {DESCRIPTIONS[role]}")
        if made:
            self.stdout.write(f"Demo goals created: {', '.join(made)}")
        if engine_note:
            self.stdout.write(engine_note)

    def _demo_engine(self, owner, made: list) -> str | None:
        """A tiny decoder engine (once) and a goal per phase, so a new user can start an engine
        run from the dashboard and watch it live."""
        from int21web.ops import engines
        from int21web.ops import models as om
        from kernels.engine import service
        from swarm.goals import GoalError
        if not om.Engine.objects.filter(name=DEMO_ENGINE).exists():
            try:
                engines.engine_import(model=service.model_from(DEMO_FAMILY, max_seq=32), name=DEMO_ENGINE, user=owner,
                                      prefill_seq=[32], decode_past=[31])
            except Exception as exc:   # no sandbox here, say: the rest of the demo still works
                return f"Demo engine not made: {getattr(exc, 'message', exc)}"
        for phase in ("prefill", "decode"):
            name = f"{DEMO_ENGINE}_{phase}: demo engine phase"
            if services.m.Goal.objects.filter(name=name).exists():
                continue
            spec = {"workload": f"{DEMO_ENGINE}_{phase}", "target": "cpu", "population": 4,
                    "budget": {"evaluations": 24, "stagnation_generations": 6}}
            try:
                services.goal_save(name=name, goal=services.goal_from(spec), owner=owner)
            except GoalError:
                continue
            made.append(name)
        return f"Demo engine: /engines/{DEMO_ENGINE}/ (goals per phase on the dashboard)"
