"""Reads of the worker registry for pages and the API: ``workers()`` and
``live_worker_for(target)``. Plain data, no side effects."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from int21web.fleet.models import Worker


def _status(row: Worker, now) -> str:
    if row.stopped_at is not None:
        return "stopped"
    if now - row.heartbeat_at > timedelta(seconds=settings.INT21_WORKER_STALE_SECONDS):
        return "stale"
    return "live"


def dead(names) -> dict[str, str]:
    """Of these worker names, those the registry knows are gone: name → "stopped" or "stale"."""
    now = timezone.now()
    return {w.name: status for w in Worker.objects.filter(name__in=list(names))
            if (status := _status(w, now)) != "live"}


def workers() -> list[dict]:
    """Every worker that ever announced itself, newest heartbeat first; ``status`` is live,
    stale (no heartbeat for INT21_WORKER_STALE_SECONDS) or stopped (said goodbye)."""
    now = timezone.now()
    rows = []
    for w in Worker.objects.order_by("-heartbeat_at"):
        rows.append({"name": w.name, "hostname": w.hostname, "pid": w.pid, "queues": w.queues,
                     "targets": w.targets, "concurrency": w.concurrency, "fingerprint": w.fingerprint,
                     "started_at": w.started_at, "heartbeat_at": w.heartbeat_at, "stopped_at": w.stopped_at,
                     "seconds_since_heartbeat": round((now - w.heartbeat_at).total_seconds(), 1),
                     "status": _status(w, now)})
    return rows


@dataclass(frozen=True)
class Availability:
    """Whether a target's queue has a live worker. Truthy when it has; ``reason`` says what a
    run page should show when it has not (and names the workers when it has)."""

    live: bool
    reason: str
    workers: list = field(default_factory=list)

    def __bool__(self) -> bool:
        return self.live


def live_worker_for(target: str) -> Availability:
    if settings.CELERY_EMBEDDED:
        from int21web.runs.embedded import current
        sup = current()
        why = sup.down(f"target.{target}") if sup is not None else None
        if why:
            return Availability(False, f"{why}; evaluations wait in the queue until it serves again")
        if target == "cuda":
            from kernels import targets
            ok, why = targets.get("cuda").can_run()
            if not ok:
                return Availability(False, f"the embedded workers serve target.cuda, but {why}: "
                                           f"CUDA candidates are compiled and checked, not run")
        return Availability(True, "the embedded workers of the web process serve this target", ["embedded"])
    now = timezone.now()
    serving = [w for w in Worker.objects.filter(targets__contains=[target]) if w.stopped_at is None] \
        if _json_contains() else [w for w in Worker.objects.all() if target in w.targets and w.stopped_at is None]
    live = [w.name for w in serving if _status(w, now) == "live"]
    if live:
        return Availability(True, f"{len(live)} live worker(s) on target.{target}: {', '.join(live)}", live)
    if serving:
        last = max(serving, key=lambda w: w.heartbeat_at)
        ago = int((now - last.heartbeat_at).total_seconds())
        return Availability(False, f"no live worker on target.{target}: the last one, {last.name}, was heard "
                                   f"from {ago} s ago; evaluations wait in the queue until one is back")
    return Availability(False, f"no worker serves target.{target}: evaluations wait in the queue; start one with "
                               f"`celery -A int21web worker -Q target.{target}` (docs/deploy.md)")


def _json_contains() -> bool:
    from django.db import connection
    return connection.vendor == "postgresql"
