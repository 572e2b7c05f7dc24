"""python manage.py demo — the demo accounts and goals of embedded mode (`make run`)."""
from django.conf import settings
from django.contrib.auth.models import Group, User
from django.core.management.base import BaseCommand, CommandError

from int21web.accounts.roles import DESCRIPTIONS, ROLES
from int21web.runs import services

PASSWORD = "int21-demo"


class Command(BaseCommand):
    help = ("Create the demo accounts (admin, engineer, reviewer, viewer; password int21-demo) and one demo "
            "goal per built-in workload. Embedded mode only: refused when DEBUG=false.")

    def add_arguments(self, parser):
        parser.add_argument("--quiet", action="store_true", help="do not print the accounts")

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
        if o["quiet"]:
            return
        self.stdout.write("Demo accounts (embedded mode only), password for each: " + PASSWORD)
        for role in ROLES:
            self.stdout.write(f"  {role:<9} {DESCRIPTIONS[role]}")
        if made:
            self.stdout.write(f"Demo goals created: {', '.join(made)}")
