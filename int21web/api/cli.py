"""What the API's commands share (`goals`, `runs`, `reviews`, `kernels`): the acting user,
JSON output, and the API's errors as a one-line CommandError (exit status 2) naming the field.
They call the same services and selectors as the API, so the two cannot drift apart."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.core.serializers.json import DjangoJSONEncoder
from pydantic import ValidationError

from int21web.accounts.roles import RoleError
from int21web.runs.services import RunStateError
from int21web.api.errors import ApiError, loc_field, split_field, strict_json
from swarm.goals import GoalError
from swarm.guidance import GuidanceError
from swarm.space import SpaceError


def add_user_arg(parser, default: str = "") -> None:
    parser.add_argument("--as", dest="as_user", default=default, metavar="USERNAME",
                        help="act as this user (their roles apply and the action is recorded with their name)")


def user(name: str):
    if not name:
        raise CommandError("say who is acting: --as USERNAME", returncode=2)
    u = get_user_model().objects.filter(username=name, is_active=True).first()
    if u is None:
        raise CommandError(f"no active user {name!r}", returncode=2)
    return u


def read_json(path: str):
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text()
        return strict_json(text)
    except OSError as exc:
        raise CommandError(f"{path}: {exc.strerror}", returncode=2) from None
    except ValueError as exc:
        raise CommandError(f"{path}: not JSON we can store: {exc}", returncode=2) from None


def emit(stdout, data) -> None:
    stdout.write(json.dumps(data, indent=2, cls=DjangoJSONEncoder))


def emit_line(stdout, data) -> None:
    stdout.write(json.dumps(data, cls=DjangoJSONEncoder))


def failure(exc: Exception) -> CommandError:
    """The API's error body, as one line: ``field: message``."""
    if isinstance(exc, ApiError):
        text = exc.error if not exc.field or exc.error.startswith(exc.field) else f"{exc.field}: {exc.error}"
    elif isinstance(exc, ValidationError):
        e = exc.errors()[0]
        text = f"{loc_field(e['loc'])}: {e['msg']}"
    elif isinstance(exc, GoalError):
        text = str(exc)                  # "<field>: <message>"
    elif isinstance(exc, SpaceError):
        text = f"space.{exc}"
    elif isinstance(exc, RunStateError):
        text = f"{exc.field}: {exc}"
    elif isinstance(exc, GuidanceError):
        text = str(exc) if split_field(str(exc))[0] else f"op: {exc}"
    else:          # RoleError, the library's ValueErrors: sentences meant for the user
        text = str(exc)
    return CommandError(text, returncode=2)


HANDLED = (ApiError, ValidationError, GoalError, SpaceError, GuidanceError, RoleError, ValueError)


class ApiCommand(BaseCommand):
    """A command that does what an API endpoint does: ``_handle(options)`` acts, and the
    domain's errors become one clear line and a non-zero exit, as the API's 4xx do."""

    def handle(self, *args, **o):
        try:
            self._handle(o)
        except HANDLED as exc:
            raise failure(exc) from None

    def _handle(self, o):
        raise NotImplementedError
