"""Writes. Each service is one state change (or one evaluation), named <entity>_<action>."""
from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import time
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, InterfaceError, OperationalError, transaction
from django.db.models import Q
from django.db.models.functions import Now
from django.utils import timezone

from int21web.runs import models as m
from int21web.runs.delivery import TimeLimit
from int21web.runs.store import DjangoEventSink, DjangoKnowledge, DjangoStore, goal_from
from kernels import targets
from swarm.judge import judge
from swarm.generation import Engine
from swarm.goals import GoalError, check_goal
from swarm.guidance import validate
from swarm.events import make_event
from swarm.types import Goal, Result

log = logging.getLogger(__name__)
# Faults of the machinery rather than of the run: the driver is queued again, the run goes on.
_INFRASTRUCTURE = (TimeLimit, OperationalError, InterfaceError)


class RunStateError(ValueError):
    """The run is in a state where the action does not apply (the API answers 409)."""

    field = "state"


def fingerprint_key(target: str) -> str:
    fp = targets.get(target).fingerprint()
    return hashlib.sha256(json.dumps(fp, sort_keys=True).encode()).hexdigest()[:16]


def engine_for(goal: Goal, *, executor=None, also=None) -> Engine:
    from int21web.runs.celery_executor import CeleryExecutor
    return Engine(DjangoStore(), executor or CeleryExecutor(), DjangoKnowledge(), DjangoEventSink(also=also),
                  fingerprint=fingerprint_key(goal.target))


def run_start(*, goal: Goal, started_by=None, goal_row=None, executor=None, also=None) -> int:
    check_goal(goal)
    eng = engine_for(goal, executor=executor, also=also)
    return eng.start(goal, started_by=started_by, goal_row=goal_row, fingerprint=eng.fingerprint)


def run_drive(*, run_id: int, executor=None, also=None, max_generations=None, slice_seconds=None):
    """Drive generations while this process holds the run's lease (``runs.lease``); a second
    driver of the same run returns at once. ``slice_seconds``: hand over to a fresh
    ``drive_run`` task after that long (between generations), so no task outlives its limits.
    Returns the run as last seen."""
    from int21web.runs.lease import Lease
    goal = goal_from(m.Run.objects.get(pk=run_id).spec)
    eng = engine_for(goal, executor=executor, also=also)
    deadline = None if slice_seconds is None else time.monotonic() + slice_seconds
    done = 0
    while True:
        lease = Lease(run_id)
        if not lease.acquire():
            return eng.store.load_run(run_id)     # driven elsewhere, or not running
        if lease.took_over and _driver_died(run_id):
            lease.release()
            return eng.store.load_run(run_id)
        handover = False
        try:
            with lease.kept():
                while not lease.lost.is_set():
                    try:
                        record = eng.run(run_id, max_generations=1)
                    except _INFRASTRUCTURE:
                        raise      # the task's time limit, a database gone: the run is driven again
                    except Exception as exc:
                        # A bug in the driver (an agent, the distiller, the store): the same crash
                        # would follow every resume, so the run ends here, saying why.
                        log.exception("the driver of run %s failed", run_id)
                        run_fail(run_id=run_id, reason=f"the driver failed: {type(exc).__name__}: {exc}")
                        return eng.store.load_run(run_id)
                    done += 1
                    if record.state != "running":
                        break
                    if max_generations is not None and done >= max_generations:
                        return record
                    if deadline is not None and time.monotonic() > deadline:
                        handover = True
                        break
        finally:
            lease.release()
        if handover:
            run_dispatch(run_id=run_id)
            return record
        if lease.lost.is_set() or not m.Run.objects.filter(pk=run_id, state="running").exists():
            return eng.store.load_run(run_id)
        # Running again after we saw it stop (a quick pause + resume): its own driver may have
        # found our lease and left, so carry on rather than leave the run undriven.


def _driver_died(run_id: int) -> bool:
    """Count a driver that died holding the run's lease; at the INT21_DRIVE_MAX_DEATHS-th in a row
    during one generation the run ends failed (the same crash would follow every restart).
    True when it did."""
    run = m.Run.objects.get(pk=run_id)
    deaths = run.driver_deaths + 1 if run.driver_death_generation == run.generation else 1
    m.Run.objects.filter(pk=run_id).update(driver_deaths=deaths, driver_death_generation=run.generation)
    log.warning("run %s: its driver died holding the lease (%d in a row during generation %d)", run_id, deaths,
                run.generation)
    if deaths < settings.INT21_DRIVE_MAX_DEATHS:
        return False
    return run_fail(run_id=run_id, reason=f"its driver died {deaths} times in a row during generation "
                                          f"{run.generation} (see the server log); not resumed again")


def run_fail(*, run_id: int, reason: str) -> bool:
    """End a run that cannot go on (its driver raised) as ``failed`` with a one-line reason
    (no traceback: that is in the server log). False when it had ended already."""
    reason = reason.splitlines()[0][:300] if reason else "the driver failed"
    with transaction.atomic():
        if not m.Run.objects.filter(pk=run_id).exclude(state__in=m.Run.ENDED).update(
                state="failed", finish_reason=reason, lease_holder="", lease_until=None, updated_at=timezone.now()):
            return False
        DjangoEventSink().emit(run_id, make_event("run_failed", reason=reason))
    return True


def run_recover(*, grace_seconds: float = 60.0) -> list[int]:
    """Queue the driver of every running run that nobody drives (its driver's process died or
    its message was lost); a duplicate finds the lease taken and returns. The orchestrate
    workers call this periodically (``runs.recovery``)."""
    stale = Now() - timedelta(seconds=grace_seconds)
    ids = list(m.Run.objects.filter(state="running").filter(
        Q(lease_until__isnull=True, updated_at__lt=stale) | Q(lease_until__lt=stale)).values_list("id", flat=True))
    for run_id in ids:
        run_dispatch(run_id=run_id)
    return ids


def run_pause(*, run_id: int, reason: str = "paused by a person") -> None:
    """Takes effect after the generation in flight; its candidates are still judged."""
    goal = goal_from(m.Run.objects.get(pk=run_id).spec)
    engine_for(goal).pause(run_id, reason)


def run_resume(*, run_id: int, reason: str = "resumed by a person", drive: bool = False) -> None:
    """``drive``: also hand the run to the orchestration queue (the web app and API do)."""
    goal = goal_from(m.Run.objects.get(pk=run_id).spec)
    engine_for(goal).resume(run_id, reason)
    if drive:
        run_dispatch(run_id=run_id)


def run_dispatch(*, run_id: int) -> None:
    """Queue the run's driver on the orchestration queue once this transaction commits."""
    from int21web.runs.tasks import drive_run
    drive_run.delay_on_commit(run_id)   # routed to "orchestrate" (CELERY_TASK_ROUTES)


def run_launch(*, goal_row: m.Goal, started_by=None, overrides: dict | None = None) -> int:
    """Start a run of a saved goal and queue its driver: what the web app's "Start" does.
    An archived goal is a GoalError (restore it first)."""
    if goal_row.archived_at is not None:
        raise GoalError("goal", f"“{goal_row.name}” is archived: restore it to start a run")
    goal = goal_from({**goal_row.spec, **(overrides or {})})
    with transaction.atomic():
        run_id = run_start(goal=goal, started_by=started_by, goal_row=goal_row)
        run_dispatch(run_id=run_id)
    return run_id


def run_stop(*, run_id: int, author=None) -> None:
    """A human stop, whatever the run's state. Recorded as guidance (so it is in the run's
    history) and applied at the next generation, its best confirmed as usual; a paused run is
    resumed to be finished so. A run that nobody drives (its driver died, its worker is gone),
    or one asked a second time, ends at once: a stop never waits on a generation that may not
    come. An ended run is left as it is."""
    run = m.Run.objects.get(pk=run_id)
    if run.state in m.Run.ENDED:
        return
    asked_before = m.Guidance.objects.filter(run_id=run_id, directive__op="stop").exists()
    guidance_post(run_id=run_id, directive={"op": "stop"}, author=author)
    if run.state == "paused" and not asked_before:
        run_resume(run_id=run_id, reason="resumed to stop", drive=True)
        return
    driven = m.Run.objects.filter(pk=run_id, state="running", lease_until__gt=Now()).exists()
    if asked_before or not driven:
        run_end(run_id=run_id, reason=f"stopped by {author.username if author else 'a person'}")


def run_end(*, run_id: int, reason: str) -> bool:
    """Finish a run now, without its closing confirmation (a driver in a generation notices at
    its next check and leaves). False when it had ended already."""
    with transaction.atomic():
        if not m.Run.objects.filter(pk=run_id).exclude(state__in=m.Run.ENDED).update(
                state="finished", finish_reason=reason[:300], updated_at=timezone.now()):
            return False
        done = m.Candidate.objects.filter(run_id=run_id, result__isnull=False).count()
        DjangoEventSink().emit(run_id, make_event("run_finished", reason=reason[:300], evaluations=done))
    return True


RUN_ACTIONS = ("pause", "resume", "stop")
# The states each action applies to; any other is a RunStateError (the API's 409).
ACTION_STATES = {"pause": ("running",), "resume": ("paused",), "stop": ("created", "running", "paused")}
_DONE = {"pause": "paused", "resume": "resumed", "stop": "stopped"}
ACTING = {"pause": "pausing", "resume": "resuming", "stop": "stopping"}


def run_control(*, run_id: int, action: str, user) -> None:
    """Pause, resume or stop a run on behalf of ``user`` (pages, API and websocket alike);
    RunStateError when the run's state does not allow it."""
    from int21web.accounts.roles import require
    if action not in RUN_ACTIONS:
        raise ValueError(f"action: must be one of {', '.join(RUN_ACTIONS)}")
    require(user, "engineer", f"{ACTING[action]} a run")
    state = m.Run.objects.filter(pk=run_id).values_list("state", flat=True).first()
    if state not in ACTION_STATES[action]:
        raise RunStateError(f"run {run_id} is {state}: only a {' or '.join(ACTION_STATES[action])} run can be "
                            f"{_DONE[action]}")
    if action == "pause":
        run_pause(run_id=run_id, reason=f"paused by {user.username}")
    elif action == "resume":
        run_resume(run_id=run_id, reason=f"resumed by {user.username}", drive=True)
    else:
        run_stop(run_id=run_id, author=user)


def space_of(goal: Goal):
    """The space a run of ``goal`` searches: its own (or the template's) plus learned variants."""
    from kernels import workloads
    from swarm.knowledge.variants import template_for
    from swarm.space import goal_space
    wl = workloads.get(goal.workload)
    shapes = wl.goal_shapes(goal.shapes)
    return goal_space(goal, wl, template_for(goal, wl, DjangoKnowledge(), fingerprint_key(goal.target)), shapes)


def goal_save(*, name: str, goal: Goal, owner=None, required_approvals: int = 1, row: m.Goal | None = None) -> m.Goal:
    """Create or update a saved goal; the goal must pass the same checks a run makes."""
    check_goal(goal)
    if row is None:
        return m.Goal.objects.create(name=name, spec=goal.to_json(), created_by=owner,
                                     required_approvals=required_approvals)
    row.name, row.spec, row.required_approvals = name, goal.to_json(), required_approvals
    row.save(update_fields=["name", "spec", "required_approvals"])
    return row


def goal_archive(*, goal_row: m.Goal, archived: bool = True) -> m.Goal:
    """Take a goal out of the list (or put it back); its runs keep it."""
    goal_row.archived_at = timezone.now() if archived else None
    goal_row.save(update_fields=["archived_at"])
    return goal_row


def goal_delete(*, goal_row: m.Goal) -> None:
    """Delete a goal no run refers to; ValueError otherwise (archive it instead)."""
    n = goal_row.runs.count()
    if n:
        raise ValueError(f"“{goal_row.name}” has {n} run{'s' if n != 1 else ''}: archive it instead, "
                         "so its runs keep their goal")
    goal_row.delete()


def goal_clone(*, goal_row: m.Goal, owner=None) -> m.Goal:
    return m.Goal.objects.create(name=f"{goal_row.name} (copy)", spec=goal_row.spec, created_by=owner,
                                 required_approvals=goal_row.required_approvals)


DEMO_GOALS = {
    "softmax": dict(shapes=["256x1024"], held_out=["97x1000"], budget={"evaluations": 24}),
    "rmsnorm": dict(shapes=["256x1024"], held_out=["97x1000"], budget={"evaluations": 24}),
    "layernorm": dict(shapes=["256x1024"], held_out=["97x1000"], budget={"evaluations": 24}),
    "matmul": dict(shapes=["128x128x128"], held_out=["65x33x47"], budget={"evaluations": 16}),
    "kda": dict(shapes=["1x256x2x64x64"], held_out=["1x50x2x40x24"], budget={"evaluations": 12}),
}


def goal_demo_set(*, owner=None) -> list[str]:
    """One small goal per built-in workload on the CPU target (demo data for `make run`)."""
    made = []
    for workload, extra in DEMO_GOALS.items():
        name = f"{workload}: demo on the CPU"
        if m.Goal.objects.filter(name=name).exists():
            continue
        spec = {"workload": workload, "target": "cpu", "population": 4, **extra,
                "budget": {"stagnation_generations": 6, **extra["budget"]}}
        try:
            goal_save(name=name, goal=goal_from(spec), owner=owner)
        except GoalError:
            continue   # a shape the workload does not take: no demo goal rather than a broken one
        made.append(name)
    return made


def guidance_post(*, run_id: int, directive: dict, author=None, author_name: str = "") -> m.Guidance:
    """Validates against the run's design space and team; takes effect next generation.
    RunStateError for a run that has ended (nothing would apply it)."""
    run = m.Run.objects.get(pk=run_id)
    if run.state in m.Run.ENDED:
        raise RunStateError(f"run {run_id} is {run.state}: guidance would never apply")
    goal = goal_from(run.spec)
    space = space_of(goal)
    directive = validate(directive, space, goal.team)
    return m.Guidance.objects.create(run=run, directive=directive, author=author,
                                     author_name=author_name or (author.username if author else ""))


def _worker_name(worker: str) -> str:
    """The worker's name as Celery gave it, or this host and process."""
    return worker or f"{socket.gethostname()}:{os.getpid()}"


def candidate_remeasure(*, candidate_id: int, round: int, worker: str = "") -> bool:
    """Measure a judged candidate again in a fresh sandboxed evaluation (``Remeasurement``).
    Safe to deliver twice: the round's row is the claim. Returns whether this call measured."""
    from int21web.runs import delivery
    try:
        with transaction.atomic():
            row = m.Remeasurement.objects.create(candidate_id=candidate_id, round=round,
                                                 worker=_worker_name(worker)[:200])
    except IntegrityError:
        return False
    cand = m.Candidate.objects.select_related("run").get(pk=candidate_id)
    goal = goal_from(cand.run.spec)
    try:
        result, _data = judge(goal, cand.source, cand.params)
    except delivery.TimeLimit:
        result = Result(status="timeout", reason="the re-measurement ran past the task's time limit")
    m.Remeasurement.objects.filter(pk=row.pk).update(status=result.status, score=result.score,
                                                     result=result.to_json(), finished_at=timezone.now())
    delivery.news_post(cand.run_id)
    return True


def candidate_evaluate(*, candidate_id: int, attempt: int = 1, worker: str = "") -> bool:
    """Judge one candidate's attempt. Safe to deliver twice: the attempt's row is the claim
    (``runs.delivery``), so a duplicate, or a candidate judged by another attempt, is left
    alone. Returns whether this call's result counted."""
    from int21web.runs import delivery
    ev = delivery.claim(candidate_id, attempt, _worker_name(worker))
    if ev is None:
        return False
    cand = m.Candidate.objects.select_related("run").get(pk=candidate_id)
    goal = goal_from(cand.run.spec)
    started = time.monotonic()
    try:
        with delivery.heartbeat(ev):
            result, data = judge(goal, cand.source, cand.params)
    except delivery.TimeLimit:   # the task's soft limit: a verdict, not a lost worker to retry
        seconds = time.monotonic() - started
        result = Result(status="timeout", reason=f"the evaluation ran past the task's time limit ({seconds:.0f} s)")
        data = {"status": result.status, "reason": result.reason, "result": result.to_json()}
        return delivery.finish(ev, status=result.status, outcome=data, seconds=seconds, run_id=cand.run_id)
    seconds = time.monotonic() - started
    return delivery.finish(ev, status=result.status, outcome=data, seconds=seconds, run_id=cand.run_id)
