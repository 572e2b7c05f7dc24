"""At-least-once delivery made exactly-once: the claim of an attempt, its heartbeat, and the
conditional finish (see ``Evaluation``'s docstring for the rules).

A worker may receive an evaluation twice (acks_late redelivery, a re-publish after the
broker restarted) or vanish in the middle of one (kill -9, a lost host). The row insert is the
claim; the evaluating process beats a heartbeat; the orchestrator (``executor.CeleryExecutor``)
re-queues an attempt whose heartbeat went stale under the next attempt number.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager

from django.conf import settings
from django.db import IntegrityError, close_old_connections, connection, transaction
from django.db.models.functions import Now

from int21web.runs import models as m


def claim(candidate_id: int, attempt: int, worker: str) -> m.Evaluation | None:
    """The attempt's row, inserted by this worker; None when the candidate is judged already or
    this attempt was claimed by an earlier delivery (whose owner finishes it, or goes stale)."""
    if m.Evaluation.objects.filter(candidate_id=candidate_id, finished_at__isnull=False).exists():
        return None
    if m.Candidate.objects.filter(pk=candidate_id, result__isnull=False).exists():
        return None
    try:
        with transaction.atomic():
            ev = m.Evaluation.objects.create(candidate_id=candidate_id, attempt=attempt, worker=worker[:200],
                                             heartbeat_at=Now())
    except IntegrityError:
        return None
    m.Candidate.objects.filter(pk=candidate_id, state__in=["proposed", "queued"]).update(state="running")
    return ev


def finish(ev: m.Evaluation, *, status: str, outcome: dict, seconds: float) -> bool:
    """Record the attempt's outcome unless it was given up on meanwhile; True when it counted."""
    return bool(m.Evaluation.objects.filter(pk=ev.pk, finished_at__isnull=True, lost_at__isnull=True).update(
        status=status, outcome=outcome, finished_at=Now(), evaluator_seconds=seconds))


@contextmanager
def heartbeat(ev: m.Evaluation):
    """Beat the attempt's heartbeat from a thread while the body (the evaluation) runs."""
    stop = threading.Event()

    def beat():
        try:
            while not stop.wait(settings.INT21_EVAL_HEARTBEAT_SECONDS):
                try:
                    m.Evaluation.objects.filter(pk=ev.pk, finished_at__isnull=True).update(heartbeat_at=Now())
                except Exception:   # the database away for a moment: the next beat tries again
                    close_old_connections()
        finally:
            connection.close()

    thread = threading.Thread(target=beat, name=f"heartbeat-eval-{ev.pk}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)
