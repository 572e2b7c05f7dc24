"""The Django side of the INT21 Kernel Factory: settings, web app, Celery adapters."""

from int21web.celery import app as celery_app  # noqa: E402  (so `celery -A int21web` finds it)

__all__ = ["celery_app"]
