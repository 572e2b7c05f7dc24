"""At-least-once delivery made exactly-once: the claim of an attempt, its heartbeat, and the
conditional finish (see ``Evaluation``'s docstring for the rules).

A worker may receive an evaluation twice (acks_late redelivery, a re-publish after the
broker restarted) or vanish in the middle of one (kill -9, a lost host). The row insert is the
claim; the evaluating process beats a heartbeat; the orchestrator (``celery_executor.CeleryExecutor``)
re-queues an attempt whose heartbeat went stale under the next attempt number.
"""
from __future__ import annotations

import time

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models.functions import Now

from int21web import beats
from int21web.runs import models as m

try:   # Celery's soft time limit, raised inside a task that ran too long
    from celery.exceptions import SoftTimeLimitExceeded as TimeLimit
except ImportError:   # pragma: no cover
    class TimeLimit(Exception):
        pass


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


def finish(ev: m.Evaluation, *, status: str, outcome: dict, seconds: float, run_id: int | None = None) -> bool:
    """Record the attempt's outcome unless it was given up on meanwhile; True when it counted.
    ``run_id``: also wake the run's orchestrator, which then reads the result at once."""
    counted = bool(m.Evaluation.objects.filter(pk=ev.pk, finished_at__isnull=True, lost_at__isnull=True).update(
        status=status, outcome=outcome, finished_at=Now(), evaluator_seconds=seconds))
    if counted and run_id is not None:
        news_post(run_id)
    return counted


# Wake-ups from workers to the orchestrator: a Redis list per run. An optimisation only: the
# orchestrator also polls the database, so a lost wake-up delays a result, never loses it.
NEWS_TTL = 3600
_news = None


def _news_client():
    global _news
    if _news is None:
        url = settings.CELERY_BROKER_URL
        if not url.startswith(("redis://", "rediss://")):
            _news = False
        else:
            import redis
            _news = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=2)
    return _news or None


def _news_key(run_id: int) -> str:
    return f"{settings.REDIS_PREFIX}int21:news:run:{run_id}"


def news_post(run_id: int) -> None:
    try:
        client = _news_client()
        if client is not None:
            client.pipeline(transaction=False).lpush(_news_key(run_id), 1).expire(_news_key(run_id), NEWS_TTL).execute()
    except Exception:
        pass


def news_wait(run_id: int, seconds: float) -> None:
    """Return when a worker of the run finished something, or after ``seconds``."""
    client = None
    try:
        client = _news_client()
        if client is not None:
            if client.blpop([_news_key(run_id)], timeout=seconds):
                client.delete(_news_key(run_id))   # one read of the database answers them all
            return
    except Exception:
        pass
    time.sleep(seconds if client is None else min(seconds, 0.05))


def heartbeat(ev: m.Evaluation):
    """Beat the attempt's heartbeat from a thread while the body (the evaluation) runs."""
    def beat():
        m.Evaluation.objects.filter(pk=ev.pk, finished_at__isnull=True).update(heartbeat_at=Now())

    return beats.beating(f"heartbeat-eval-{ev.pk}", lambda: settings.INT21_EVAL_HEARTBEAT_SECONDS, beat)
