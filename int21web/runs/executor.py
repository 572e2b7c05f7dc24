"""The swarm's Executor over Celery: one task per candidate on the goal's target queue,
results read back from the database (each task writes its Evaluation row idempotently)."""
from __future__ import annotations

import time

from django.db import transaction

from int21web.runs import models as m
from int21web.runs.store import result_from
from swarm.types import Goal


class CeleryExecutor:
    poll_seconds = 0.02

    def __init__(self, timeout_seconds: float = 3600.0):
        self.timeout_seconds = timeout_seconds

    def evaluate(self, goal: Goal, candidates):
        if not candidates:
            return
        from celery import group

        from int21web.runs.tasks import evaluate_candidate
        queue = f"target.{goal.target}"
        ids = [c.id for c in candidates]
        with transaction.atomic():
            m.Candidate.objects.filter(pk__in=ids, state="proposed").update(state="queued")
            # A candidate found half-evaluated after a crash gets a new attempt number.
            signatures = [evaluate_candidate.si(cid, m.Evaluation.objects.filter(
                candidate_id=cid, finished_at__isnull=True).count() + 1).set(queue=queue) for cid in ids]
            transaction.on_commit(lambda: group(signatures).apply_async())
        waiting = set(ids)
        deadline = time.monotonic() + self.timeout_seconds
        while waiting and time.monotonic() < deadline:
            # Materialised before yielding: an open SQLite cursor would block the writes the
            # engine makes between two results.
            done = list(m.Evaluation.objects.filter(candidate_id__in=waiting, finished_at__isnull=False))
            for ev in done:
                if ev.candidate_id in waiting:
                    waiting.discard(ev.candidate_id)
                    yield ev.candidate_id, result_from(ev.outcome.get("result")), ev.outcome
            if waiting:
                time.sleep(self.poll_seconds)
