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
from swarm.generation import Engine, check_goal
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
    goal = goal_from(m.Run.objects.get(pk=run_id).spec)
    engine_for(goal).pause(run_id, reason)


def run_resume(*, run_id: int, reason: str = "resumed by a person") -> None:
    goal = goal_from(m.Run.objects.get(pk=run_id).spec)
    engine_for(goal).resume(run_id, reason)


def guidance_post(*, run_id: int, directive: dict, author=None, author_name: str = "") -> m.Guidance:
    """Validates against the run's design space and team; takes effect next generation."""
    run = m.Run.objects.get(pk=run_id)
    goal = goal_from(run.spec)
    from kernels import workloads
    space = workloads.get(goal.workload).template(goal.target).space
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
