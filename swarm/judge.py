"""Judging a candidate for a goal: one place, called by every executor, task and service.

``judge(goal, source, params)`` builds the evaluation settings from the goal (its shapes,
held-out shapes, tolerance and ``eval_settings``, read against the harness's allowlist:
a goal may only tighten), runs the harness, and returns the swarm's :class:`Result` with the
full outcome as JSON. ``held_out=True`` is the approval gate's re-check: the harness's full
defaults plus the goal's tightenings only, the goal's held-out shapes and the workload's own.
"""
from __future__ import annotations

from kernels import workloads
from kernels.harness.evaluator import Evaluator
from kernels.harness.settings import EvalSettings, from_goal, gate_settings, tolerance_notes
from kernels.spec import Tolerance
from swarm.types import Goal, Result


def settings_for(goal: Goal, *, held_out: bool = False) -> EvalSettings:
    """The harness settings for ``goal`` (SettingsError for eval_settings a goal may not hold)."""
    wl = workloads.get(goal.workload)
    settings = (gate_settings if held_out else from_goal)(goal.eval_settings, workload=wl, target=goal.target)
    shapes = [wl.shape_from_text(s) for s in goal.shapes]
    if shapes:
        settings.timing_shape = shapes[0]
    extra = list(shapes[1:])
    if held_out:
        extra += [wl.shape_from_text(s) for s in goal.held_out] + list(wl.shapes.held_out)
    settings.extra_shapes = tuple(dict.fromkeys(extra)) + tuple(settings.extra_shapes)
    if goal.tolerance:
        settings.tolerance = Tolerance(**goal.tolerance)
        settings.loosened = settings.loosened + tuple(tolerance_notes(settings.tolerance, wl.tolerance))
    return settings


def judge(goal: Goal, source: str, params: dict, *, held_out: bool = False, on_stage=None) -> tuple[Result, dict]:
    """(Result, outcome JSON with the Result under "result") for one candidate of ``goal``."""
    outcome = Evaluator(settings_for(goal, held_out=held_out), on_stage=on_stage).evaluate(
        source, params, goal.workload, goal.target)
    result = Result.from_outcome(outcome, goal.metric)
    data = outcome.to_json()
    data["result"] = result.to_json()
    return result, data
