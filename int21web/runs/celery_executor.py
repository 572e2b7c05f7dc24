"""The swarm's Executor over Celery: one task per candidate attempt on the goal's target
queue, results read back from the database (each task writes its Evaluation row, see
``runs.delivery``). The in-process executor, for tests and benchmarks, is
``swarm.executors.LocalExecutor``: the same harness, so a verdict does not depend on which ran.

While it waits, the executor also keeps delivery honest:
- an attempt whose heartbeat went stale (its worker was killed, its host vanished) is marked
  lost and the candidate is queued again under the next attempt number; sooner when the fleet
  registry already sees its worker dead (seconds: INT21_WORKER_STALE);
- after the broker restarts (Redis's run id changed), attempts that no worker claimed yet are
  published again, since a broker without persistence forgets its queues (a duplicate of a
  message that survived is a no-op: the claim is the row); so are unclaimed attempts while
  the target's queue stays empty over two checks (a message lost any other way: published
  just after a restart, before the workers had declared their queues again);
- a publish that failed (broker down) is tried again every ``check_seconds``;
- a candidate that lost ``max_attempts`` workers is a value, not a loop: it is recorded as
  crashed with the reason.
"""
from __future__ import annotations

import logging
import time
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models.functions import Now
from django.utils import timezone

from int21web.runs import delivery
from int21web.runs import models as m
from int21web.runs.store import result_from
from swarm.types import Goal, Result

log = logging.getLogger(__name__)


class CeleryExecutor:
    poll_seconds = 0.02     # results: how often the database is asked (without a Redis broker)
    news_seconds = 0.5      # with one: the longest wait for a worker's wake-up between two reads
    check_seconds = 1.0     # stale attempts, broker restarts, failed publishes
    max_attempts = 3

    def __init__(self, timeout_seconds: float | None = None):
        self.timeout_seconds = timeout_seconds

    def evaluate(self, goal: Goal, candidates):
        if not candidates:
            return
        queue = f"target.{goal.target}"
        ids = [c.id for c in candidates]
        run_id = candidates[0].run_id
        with transaction.atomic():
            m.Candidate.objects.filter(pk__in=ids, attempt=0).update(attempt=1)
            m.Candidate.objects.filter(pk__in=ids, state="proposed").update(state="queued")
        # A resumed candidate keeps its attempt number: if its message is still queued, the
        # copy published now finds the claim and does nothing.
        attempts = dict(m.Candidate.objects.filter(pk__in=ids).values_list("id", "attempt"))
        unsent = set(ids)
        waiting = set(ids)
        epoch = broker_epoch()
        stale_after = timedelta(seconds=settings.INT21_EVAL_STALE_SECONDS)
        deadline = None if self.timeout_seconds is None else time.monotonic() + self.timeout_seconds
        next_check = time.monotonic() + self.check_seconds
        next_publish = 0.0
        empty_checks = 0
        while waiting:
            if unsent and time.monotonic() >= next_publish:
                next_publish = time.monotonic() + self.check_seconds
                self._publish(unsent, attempts, queue)
            done = list(m.Evaluation.objects.filter(candidate_id__in=waiting, finished_at__isnull=False))
            for ev in done:
                if ev.candidate_id in waiting:
                    waiting.discard(ev.candidate_id)
                    yield ev.candidate_id, result_from(ev.outcome.get("result")), {**ev.outcome, "attempt": ev.attempt}
            if not waiting or (deadline is not None and time.monotonic() > deadline):
                return
            if time.monotonic() >= next_check:
                next_check = time.monotonic() + self.check_seconds
                if ended(run_id):
                    return   # stopped (or failed) while it waited: the rest are never needed
                for cid, why in self._requeue_stale(waiting, attempts, stale_after):
                    if attempts[cid] > self.max_attempts:
                        waiting.discard(cid)
                        yield cid, *self._give_up(cid, attempts[cid], why)
                    else:
                        unsent.add(cid)
                claimed = set(m.Evaluation.objects.filter(candidate_id__in=waiting).values_list(
                    "candidate_id", "attempt"))
                unclaimed = {cid for cid in waiting if (cid, attempts[cid]) not in claimed} - unsent
                now_epoch = broker_epoch()
                if unclaimed and now_epoch and epoch and now_epoch != epoch:
                    log.warning("the broker restarted: publishing %d unclaimed evaluations again", len(unclaimed))
                    unsent |= unclaimed
                elif unclaimed:
                    empty_checks = empty_checks + 1 if queue_size(queue) == 0 else 0
                    if empty_checks >= 2:
                        log.warning("%d unclaimed evaluations are not in %s: publishing them again",
                                    len(unclaimed), queue)
                        unsent |= unclaimed
                        empty_checks = 0
                epoch = now_epoch or epoch
            self._wait(run_id, min(self.news_seconds, max(0.0, next_check - time.monotonic())) or 0.01)

    def remeasure(self, goal: Goal, candidates, round: int):
        """Fresh measurements of judged candidates (the run confirming its best few): one task
        per candidate on the target's queue, results read back from ``Remeasurement`` rows. A
        round already measured answers from its row; one not back within
        ``INT21_REMEASURE_TIMEOUT_SECONDS`` is left out (the run goes on without it)."""
        from int21web.runs.tasks import remeasure_candidate
        if not candidates:
            return
        queue = f"target.{goal.target}"
        ids = [c.id for c in candidates]
        asked = set(m.Remeasurement.objects.filter(candidate_id__in=ids, round=round).values_list(
            "candidate_id", flat=True))

        def send():
            for cid in ids:
                if cid in asked:
                    continue
                try:
                    remeasure_candidate.apply_async((cid, round), queue=queue, retry=True,
                                                    retry_policy={"max_retries": 1, "interval_start": 0.2})
                except Exception as exc:   # the broker is down: this round goes without it
                    log.warning("could not queue a re-measurement of candidate %s: %s", cid, exc)
        transaction.on_commit(send)
        waiting = set(ids)
        deadline = time.monotonic() + settings.INT21_REMEASURE_TIMEOUT_SECONDS
        while waiting:
            for row in m.Remeasurement.objects.filter(candidate_id__in=waiting, round=round, finished_at__isnull=False):
                waiting.discard(row.candidate_id)
                yield row.candidate_id, result_from(row.result)
            if not waiting:
                return
            if time.monotonic() > deadline or ended(candidates[0].run_id):
                log.warning("re-measurement round %s: no answer for candidates %s in %g s; going on without",
                            round, sorted(waiting), settings.INT21_REMEASURE_TIMEOUT_SECONDS)
                return
            self._wait(candidates[0].run_id, self.news_seconds)

    def _wait(self, run_id: int, seconds: float) -> None:
        """Until a worker of the run says it finished something (Redis), or a short poll."""
        if settings.CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
            delivery.news_wait(run_id, seconds)
        else:
            time.sleep(self.poll_seconds)

    def _publish(self, unsent: set, attempts: dict, queue: str) -> None:
        from int21web.runs.tasks import evaluate_candidate

        def send():
            for cid in sorted(unsent):
                try:
                    evaluate_candidate.apply_async((cid, attempts[cid]), queue=queue, retry=True,
                                                   retry_policy={"max_retries": 1, "interval_start": 0.2})
                except Exception as exc:   # the broker is down: the next check publishes again
                    log.warning("could not queue candidate %s (attempt %s): %s", cid, attempts[cid], exc)
                    return
                unsent.discard(cid)
        transaction.on_commit(send)

    def _give_up(self, cid: int, attempt: int, why: str):
        """The orchestrator's own verdict, as the candidate's one finished attempt: it lost a worker
        ``max_attempts`` times (a kernel that kills its worker, or a host that keeps dying)."""
        result = Result(status="crashed", reason=f"lost {attempt - 1} workers in a row; the last: {why}")
        outcome = {"status": "crashed", "reason": result.reason, "result": result.to_json(), "attempt": attempt}
        m.Evaluation.objects.get_or_create(candidate_id=cid, attempt=attempt, defaults=dict(
            worker="orchestrator", status="crashed", outcome=outcome, finished_at=Now(), heartbeat_at=Now()))
        return result, outcome

    def _requeue_stale(self, waiting: set, attempts: dict, stale_after: timedelta):
        """Give up on attempts whose heartbeat stopped, or whose worker the fleet registry sees
        gone (stopped, or stale: INT21_WORKER_STALE) and that missed two beats of their own:
        a dead worker's evaluation is queued again within seconds, not after INT21_EVAL_STALE.
        Yields (candidate, why) for each re-queued."""
        quiet = min(stale_after, timedelta(seconds=2 * settings.INT21_EVAL_HEARTBEAT_SECONDS))
        silent = list(m.Evaluation.objects.filter(candidate_id__in=waiting, finished_at__isnull=True,
                                                  lost_at__isnull=True, heartbeat_at__lt=Now() - quiet))
        gone = _dead_workers({ev.worker for ev in silent}) if silent else {}
        now = timezone.now()
        for ev in silent:
            if ev.attempt != attempts[ev.candidate_id]:
                continue
            if ev.worker not in gone and ev.heartbeat_at >= now - stale_after:
                continue
            if not m.Evaluation.objects.filter(pk=ev.pk, finished_at__isnull=True, lost_at__isnull=True).update(
                    lost_at=Now()):
                continue   # it finished (or was given up on) just now
            attempts[ev.candidate_id] = ev.attempt + 1
            m.Candidate.objects.filter(pk=ev.candidate_id).update(attempt=ev.attempt + 1, state="queued")
            if ev.worker in gone:
                why = f"worker {ev.worker} died during attempt {ev.attempt} (the fleet sees it {gone[ev.worker]})"
            else:
                why = (f"worker {ev.worker} stopped answering during attempt {ev.attempt} "
                       f"(no heartbeat for {stale_after.total_seconds():g} s)")
            log.warning("candidate %s: %s; queued attempt %s", ev.candidate_id, why, ev.attempt + 1)
            yield ev.candidate_id, why


def _dead_workers(names: set) -> dict[str, str]:
    try:
        from int21web.fleet.selectors import dead   # the fleet registry, where installed
    except ImportError:
        return {}
    return dead(names)


def ended(run_id: int) -> bool:
    return m.Run.objects.filter(pk=run_id, state__in=m.Run.ENDED).exists()


def queue_size(queue: str) -> int | None:
    """Messages waiting in a queue (not those a worker holds); None when unknown."""
    if settings.CELERY_EMBEDDED:
        return None
    from int21web.celery import app
    try:
        with app.pool.acquire(block=True, timeout=2) as conn:
            return int(conn.default_channel._size(queue))
    except Exception:
        return None


_redis_client = None


def broker_epoch() -> str | None:
    """Something that changes when the broker restarts (Redis's run id); a constant for
    brokers without one; None while the broker does not answer."""
    global _redis_client
    url = settings.CELERY_BROKER_URL
    if not url.startswith(("redis://", "rediss://")):
        return "constant"
    try:
        if _redis_client is None:
            import redis
            _redis_client = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
        return _redis_client.info("server")["run_id"]
    except Exception:
        return None
