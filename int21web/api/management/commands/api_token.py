"""python manage.py api_token USER [--name NAME] | --list | --revoke ID"""
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from int21web.api import services
from int21web.api.models import ApiToken


class Command(BaseCommand):
    help = ("Make an API token for USER and print it once (only its hash is stored). Use it as "
            "'Authorization: Bearer <token>'. --list shows a user's tokens, --revoke ID ends one.")

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="what the token is for")
        parser.add_argument("--list", action="store_true", help="list the user's tokens instead")
        parser.add_argument("--revoke", type=int, metavar="ID", help="revoke the user's token ID instead")

    def handle(self, *args, **o):
        user = get_user_model().objects.filter(username=o["username"]).first()
        if user is None:
            raise CommandError(f"no user {o['username']!r}", returncode=2)
        if o["list"]:
            for t in ApiToken.objects.filter(user=user):
                state = f"revoked {t.revoked_at:%Y-%m-%d}" if t.revoked_at else \
                    f"last used {t.last_used_at:%Y-%m-%d %H:%M}" if t.last_used_at else "never used"
                self.stdout.write(f"{t.id:>5}  {t.prefix}…  {t.name or '-'}  created {t.created_at:%Y-%m-%d}  {state}")
            return
        if o["revoke"] is not None:
            if not ApiToken.objects.filter(pk=o["revoke"], user=user).exists():
                raise CommandError(f"{user.username} has no token {o['revoke']}", returncode=2)
            services.token_revoke(token_id=o["revoke"])
            self.stdout.write(f"token {o['revoke']} revoked")
            return
        row, token = services.token_create(user=user, name=o["name"])
        self.stderr.write(f"token {row.id} for {user.username} (shown once; only its hash is kept):")
        self.stdout.write(token)
