"""python manage.py llm check [--model M] [--provider P] [--base-url U] | llm show"""
import json

from django.core.management.base import BaseCommand, CommandError

from swarm.llm import config
from swarm.llm.check import check


class Command(BaseCommand):
    help = ("Language-model settings: `check` calls the configured model once and says what happened "
            "(exit 0 when it answered); `show` prints the effective settings (never the key).")

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["check", "show"])
        parser.add_argument("--provider", help="override LLM_PROVIDER (openai or ollama)")
        parser.add_argument("--model", help="override LLM_MODEL")
        parser.add_argument("--base-url", help="override LLM_BASE_URL (no key is sent to another URL)")

    def handle(self, *args, **o):
        choice = {k: v for k, v in (("provider", o["provider"]), ("model", o["model"]),
                                    ("base_url", o["base_url"])) if v}
        if o["action"] == "show":
            self.stdout.write(json.dumps(config.status(choice), indent=2))
            return
        code, message = check(choice)
        if code:
            raise CommandError(message, returncode=code)
        self.stdout.write(message)
