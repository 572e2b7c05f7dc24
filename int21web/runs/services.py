"""Writes. Each service is one state change (or one evaluation), named <entity>_<action>."""
from __future__ import annotations

import hashlib
import json
import socket

from django.db import transaction
from django.utils import timezone

from int21web.runs import models as m
from int21web.runs.store import DjangoEventSink, DjangoKnowledge, DjangoStore, goal_from
from kernels import targets
from kernels.harness.evaluator import Evaluator
from swarm.executors import eval_settings
from swarm.generation import Engine, GoalError, check_goal
from swarm.guidance import validate
from swarm.types import Goal, Result


def fingerprint_key(target: str) -> str:
    fp = targets.get(target).fingerprint()
    return hashlib.sha256(json.dumps(fp, sort_keys=True).encode()).hexdigest()[:16]


def engine_for(goal: Goal, *, executor=None, also=None) -> Engine:
    from int21web.runs.executor import CeleryExecutor
    return Engine(DjangoStore(), executor or CeleryExecutor(), DjangoKnowledge(), DjangoEventSink(also=also),
                  fingerprint=fingerprint_key(goal.target))


def run_start(*, goal: Goal, started_by=None, goal_row=None, executor=None, also=None) -> int:
    check_goal(goal)
    eng = engine_for(goal, executor=executor, also=also)
    return eng.start(goal, started_by=started_by, goal_row=goal_row, fingerprint=eng.fingerprint)


def run_drive(*, run_id: int, executor=None, also=None, max_generations=None):
    goal = goal_from(m.Run.objects.get(pk=run_id).spec)
    return engine_for(goal, executor=executor, also=also).run(run_id, max_generations=max_generations)


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
    transaction.on_commit(lambda: drive_run.apply_async((run_id,), queue="orchestrate"))


def run_launch(*, goal_row: m.Goal, started_by=None, overrides: dict | None = None) -> int:
    """Start a run of a saved goal and queue its driver: what the web app's "Start" does."""
    goal = goal_from({**goal_row.spec, **(overrides or {})})
    with transaction.atomic():
        run_id = run_start(goal=goal, started_by=started_by, goal_row=goal_row)
        run_dispatch(run_id=run_id)
    return run_id


def run_stop(*, run_id: int, author=None) -> None:
    """A human stop: recorded as guidance (so it is in the run's history), applied at the next
    generation; a paused run is finished straight away."""
    run = m.Run.objects.get(pk=run_id)
    if run.state == "finished":
        return
    guidance_post(run_id=run_id, directive={"op": "stop"}, author=author)
    if run.state == "paused":
        run_resume(run_id=run_id, reason="resumed to stop", drive=True)


def space_of(goal: Goal):
    from kernels import workloads
    from swarm.space import goal_space
    wl = workloads.get(goal.workload)
    shapes = [wl.shape_from_text(s) for s in goal.shapes] or [wl.shapes.typical[0]]
    return goal_space(goal, wl, wl.template(goal.target), shapes)


def goal_save(*, name: str, goal: Goal, owner=None, required_approvals: int = 1, row: m.Goal | None = None) -> m.Goal:
    """Create or update a saved goal; the goal must pass the same checks a run makes."""
    check_goal(goal)
    if row is None:
        return m.Goal.objects.create(name=name, spec=goal.to_json(), created_by=owner,
                                     required_approvals=required_approvals)
    row.name, row.spec, row.required_approvals = name, goal.to_json(), required_approvals
    row.save(update_fields=["name", "spec", "required_approvals"])
    return row


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
    """Validates against the run's design space and team; takes effect next generation."""
    run = m.Run.objects.get(pk=run_id)
    goal = goal_from(run.spec)
    space = space_of(goal)
    directive = validate(directive, space, goal.team)
    return m.Guidance.objects.create(run=run, directive=directive, author=author,
                                     author_name=author_name or (author.username if author else ""))


def candidate_evaluate(*, candidate_id: int, attempt: int = 1) -> None:
    """Judge one candidate. Safe to run twice: a finished attempt, or a candidate already
    judged by another attempt, is left alone."""
    cand = m.Candidate.objects.select_related("run").get(pk=candidate_id)
    ev, _ = m.Evaluation.objects.get_or_create(candidate=cand, attempt=attempt,
                                               defaults={"worker": socket.gethostname()})
    if ev.finished_at or m.Evaluation.objects.filter(candidate=cand, finished_at__isnull=False).exists():
        return
    m.Candidate.objects.filter(pk=candidate_id, state__in=["proposed", "queued"]).update(state="running")
    goal = goal_from(cand.run.spec)
    outcome = Evaluator(eval_settings(goal)).evaluate(cand.source, cand.params, goal.workload, goal.target)
    result = Result.from_outcome(outcome, goal.metric)
    data = outcome.to_json()
    data["result"] = result.to_json()
    with transaction.atomic():
        m.Evaluation.objects.filter(pk=ev.pk, finished_at__isnull=True).update(
            status=result.status, outcome=data, finished_at=timezone.now(), worker=socket.gethostname())
