"""Idempotent orchestration and delivery, on the database alone: one lease per run, one claim
per attempt, a lost attempt's late result refused, a stale attempt re-queued once."""
import os
import subprocess
from datetime import timedelta

import pytest
from django.db.models.functions import Now
from django.utils import timezone

from int21web.runs import delivery, services
from int21web.runs import models as m
from int21web.runs.celery_executor import CeleryExecutor
from int21web.runs.lease import HOST, Lease


@pytest.fixture
def run(db):
    row = m.Run.objects.create(spec={"workload": "softmax", "target": "cpu"}, state="running")
    return row


@pytest.fixture
def candidate(run):
    return m.Candidate.objects.create(run=run, generation=0, key="k1", params={}, agent="explorer", rationale="",
                                      source="", attempt=1, state="queued")


def test_a_second_driver_finds_the_lease_taken(run):
    first, second = Lease(run.id), Lease(run.id)
    assert first.acquire()
    assert not second.acquire()
    first.release()
    assert second.acquire()


def test_an_expired_lease_is_free(run):
    m.Run.objects.filter(pk=run.id).update(lease_holder="elsewhere:1:ab", lease_until=timezone.now() - timedelta(seconds=1))
    assert Lease(run.id).acquire()


def test_a_lease_whose_process_died_on_this_host_is_free_at_once(run):
    p = subprocess.Popen(["true"])
    p.wait()
    m.Run.objects.filter(pk=run.id).update(lease_holder=f"{HOST}:{p.pid}:ab",
                                           lease_until=timezone.now() + timedelta(minutes=5))
    assert Lease(run.id).acquire()
    m.Run.objects.filter(pk=run.id).update(lease_holder=f"{HOST}:{os.getpid()}:cd",
                                           lease_until=timezone.now() + timedelta(minutes=5))
    assert not Lease(run.id).acquire(), "a live holder keeps it"


def test_a_renewal_after_the_lease_was_taken_over_says_so(run):
    mine = Lease(run.id, ttl_seconds=60)
    assert mine.acquire()
    m.Run.objects.filter(pk=run.id).update(lease_holder="elsewhere:1:ab")
    assert not mine.renew() and mine.lost.is_set()


def test_only_running_runs_are_driven(run):
    m.Run.objects.filter(pk=run.id).update(state="paused")
    assert not Lease(run.id).acquire()


def test_drive_returns_at_once_while_another_driver_holds_the_run(run):
    m.Run.objects.filter(pk=run.id).update(lease_holder="elsewhere:1:ab", lease_until=timezone.now() + timedelta(minutes=1))

    class Boom:
        def evaluate(self, goal, candidates):
            raise AssertionError("must not evaluate")

    record = services.run_drive(run_id=run.id, executor=Boom())
    assert record.generation == 0 and not m.Generation.objects.filter(run=run).exists()


def test_an_attempt_is_claimed_once(candidate):
    assert delivery.claim(candidate.id, 1, "w1") is not None
    assert delivery.claim(candidate.id, 1, "w2") is None, "a second delivery of the same attempt"
    assert m.Candidate.objects.get(pk=candidate.id).state == "running"


def test_a_lost_attempt_cannot_finish_and_a_finished_candidate_is_not_claimed_again(candidate):
    first = delivery.claim(candidate.id, 1, "w1")
    m.Evaluation.objects.filter(pk=first.pk).update(lost_at=Now())
    second = delivery.claim(candidate.id, 2, "w2")
    assert not delivery.finish(first, status="ok", outcome={}, seconds=1.0)
    assert delivery.finish(second, status="ok", outcome={}, seconds=1.0)
    assert delivery.claim(candidate.id, 3, "w3") is None
    assert m.Evaluation.objects.filter(candidate=candidate, finished_at__isnull=False).count() == 1


def test_a_stale_attempt_is_requeued_once_under_the_next_number(candidate, settings):
    ev = delivery.claim(candidate.id, 1, "gone@host")
    m.Evaluation.objects.filter(pk=ev.pk).update(heartbeat_at=timezone.now() - timedelta(minutes=5))
    attempts = {candidate.id: 1}
    ex = CeleryExecutor()
    again = list(ex._requeue_stale({candidate.id}, attempts, timedelta(seconds=30)))
    assert [cid for cid, _ in again] == [candidate.id] and "gone@host stopped answering" in again[0][1]
    assert attempts == {candidate.id: 2} and m.Candidate.objects.get(pk=candidate.id).attempt == 2
    assert list(ex._requeue_stale({candidate.id}, attempts, timedelta(seconds=30))) == []


def test_an_attempt_of_a_worker_the_fleet_sees_dead_is_requeued_within_seconds(candidate, settings):
    """Its own heartbeat is only two beats old (INT21_EVAL_STALE is far off), but its worker
    stopped beating in the fleet registry: the candidate is queued again now."""
    from int21web.fleet import services as fleet
    from int21web.fleet.models import Worker
    fleet.worker_announce(name="dead@host", hostname="host", pid=1, queues=["target.cpu"], targets=["cpu"],
                          concurrency=1, fingerprint={})
    fleet.worker_announce(name="alive@host", hostname="host", pid=2, queues=["target.cpu"], targets=["cpu"],
                          concurrency=1, fingerprint={})
    quiet = timezone.now() - timedelta(seconds=2 * settings.INT21_EVAL_HEARTBEAT_SECONDS + 1)
    Worker.objects.filter(name="dead@host").update(
        heartbeat_at=timezone.now() - timedelta(seconds=settings.INT21_WORKER_STALE_SECONDS + 1))
    ev = delivery.claim(candidate.id, 1, "dead@host")
    m.Evaluation.objects.filter(pk=ev.pk).update(heartbeat_at=quiet)
    other = m.Candidate.objects.create(run=candidate.run, generation=0, key="k2", params={}, agent="explorer",
                                       rationale="", source="", attempt=1, state="queued")
    busy = delivery.claim(other.id, 1, "alive@host")
    m.Evaluation.objects.filter(pk=busy.pk).update(heartbeat_at=quiet)
    attempts = {candidate.id: 1, other.id: 1}
    again = list(CeleryExecutor()._requeue_stale({candidate.id, other.id}, attempts, timedelta(seconds=30)))
    assert again == [(candidate.id, "worker dead@host died during attempt 1 (the fleet sees it stale)")]
    assert attempts == {candidate.id: 2, other.id: 1}


def test_a_fresh_heartbeat_is_left_alone(candidate):
    delivery.claim(candidate.id, 1, "busy@host")
    assert list(CeleryExecutor()._requeue_stale({candidate.id}, {candidate.id: 1}, timedelta(seconds=30))) == []


def test_recovery_queues_the_driver_of_an_undriven_run(run, django_capture_on_commit_callbacks, monkeypatch):
    sent = []
    from int21web.runs import tasks
    monkeypatch.setattr(tasks.drive_run, "delay_on_commit", lambda run_id: sent.append(run_id))
    m.Run.objects.filter(pk=run.id).update(updated_at=timezone.now() - timedelta(minutes=5))
    assert services.run_recover(grace_seconds=60) == [run.id] and sent == [run.id]
    m.Run.objects.filter(pk=run.id).update(lease_holder="x:1:a", lease_until=timezone.now() + timedelta(minutes=1))
    assert services.run_recover(grace_seconds=60) == []


def test_a_candidate_that_loses_its_worker_three_times_is_recorded_as_crashed(candidate, monkeypatch):
    """A kernel that kills whoever evaluates it must not loop forever: after max_attempts lost
    workers the orchestrator records its own verdict as the one finished attempt."""
    from int21web.runs import celery_executor as ex_module
    monkeypatch.setattr(ex_module, "broker_epoch", lambda: "constant")
    monkeypatch.setattr(ex_module, "queue_size", lambda queue: None)
    ex = CeleryExecutor()
    ex.check_seconds = 0.0
    monkeypatch.setattr(ex, "_publish", lambda unsent, attempts, queue: unsent.clear())

    def die(attempt):   # a worker claims the attempt, then goes silent
        ev = delivery.claim(candidate.id, attempt, f"w{attempt}@host")
        m.Evaluation.objects.filter(pk=ev.pk).update(heartbeat_at=timezone.now() - timedelta(minutes=5))

    def sleep(_seconds):   # between two checks, the worker of the newest attempt claims it and dies
        attempt = m.Candidate.objects.get(pk=candidate.id).attempt
        if not m.Evaluation.objects.filter(candidate=candidate, attempt=attempt).exists():
            die(attempt)

    monkeypatch.setattr(ex_module.time, "sleep", sleep)
    monkeypatch.setattr(ex_module.delivery, "news_wait", lambda run_id, seconds: sleep(seconds))
    from swarm.types import Candidate as C
    goal = type("G", (), {"target": "cpu"})()
    out = list(ex.evaluate(goal, [C(id=candidate.id, run_id=candidate.run_id, generation=0, key="k1", params={},
                                    agent="explorer", rationale="", source="", parents=[])]))
    (cid, result, outcome), = out
    assert cid == candidate.id and result.status == "crashed" and "lost 3 workers in a row" in result.reason
    assert outcome["attempt"] == 4
    finished = m.Evaluation.objects.filter(candidate=candidate, finished_at__isnull=False)
    assert [(e.attempt, e.worker) for e in finished] == [(4, "orchestrator")]


def test_an_evaluation_past_the_soft_time_limit_is_a_timeout_verdict(candidate, monkeypatch):
    from int21web.runs import services as s
    m.Run.objects.filter(pk=candidate.run_id).update(spec={"workload": "softmax", "target": "cpu"})

    def slow(goal, source, params, **kw):   # the judge, interrupted by the task's soft limit
        raise delivery.TimeLimit()

    monkeypatch.setattr(s, "judge", slow)
    assert s.candidate_evaluate(candidate_id=candidate.id, attempt=1, worker="w@h")
    (ev,) = m.Evaluation.objects.filter(candidate=candidate)
    assert ev.status == "timeout" and ev.finished_at and "ran past the task's time limit" in ev.outcome["reason"]
    assert ev.outcome["result"]["status"] == "timeout"
