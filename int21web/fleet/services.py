"""Writes of the worker registry, called by the workers themselves (``fleet.worker``)."""
from __future__ import annotations

from django.db.models.functions import Now

from int21web.fleet.models import Worker


def worker_announce(*, name: str, hostname: str, pid: int, queues: list[str], targets: list[str],
                    concurrency: int, fingerprint: dict) -> Worker:
    """A worker (re)started under this node name: its row says what it serves now."""
    row, _ = Worker.objects.update_or_create(name=name, defaults=dict(
        hostname=hostname, pid=pid, queues=queues, targets=targets, concurrency=concurrency,
        fingerprint=fingerprint, started_at=Now(), heartbeat_at=Now(), stopped_at=None))
    return row


def worker_heartbeat(*, name: str) -> bool:
    return bool(Worker.objects.filter(name=name).update(heartbeat_at=Now(), stopped_at=None))


def worker_stopped(*, name: str) -> None:
    Worker.objects.filter(name=name).update(stopped_at=Now())
