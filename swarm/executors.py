"""Executors that evaluate in this process's own sandboxes (tests, CLI without a broker).

The Django/Celery executor lives in ``int21web/runs/celery_executor.py``; both go through
the same harness, so a verdict does not depend on which one ran it.
"""
from __future__ import annotations

from kernels.harness.evaluator import EvalSettings, Evaluator
from kernels import workloads
from kernels.spec import Tolerance
from swarm.types import Goal, Result


def eval_settings(goal: Goal, *, held_out: bool = False) -> EvalSettings:
    """``held_out``: add the goal's held-out shapes to correctness (the promotion re-check);
    the search itself never sees them."""
    wl = workloads.get(goal.workload)
    shapes = [wl.shape_from_text(s) for s in goal.shapes]
    known = {k: v for k, v in goal.eval_settings.items() if k in EvalSettings.__dataclass_fields__}
    settings = EvalSettings(**known)
    extra = tuple(wl.shape_from_text(s) for s in goal.held_out) if held_out else ()
    if shapes:
        settings.timing_shape = shapes[0]
    settings.extra_shapes = tuple(shapes[1:]) + extra + tuple(settings.extra_shapes)
    if goal.tolerance:
        settings.tolerance = Tolerance(**goal.tolerance)
    return settings


class LocalExecutor:
    """One evaluation at a time: on a small host, concurrent timing would measure contention."""

    def __init__(self, on_result=None):
        self.on_result = on_result

    def evaluate(self, goal: Goal, candidates):
        if not candidates:
            return
        ev = Evaluator(eval_settings(goal))
        for c in candidates:
            outcome = ev.evaluate(c.source, c.params, goal.workload, goal.target)
            result = Result.from_outcome(outcome, goal.metric)
            yield c.id, result, outcome.to_json()

    def remeasure(self, goal: Goal, candidates, round: int):
        """A fresh evaluation of each (a run confirming its best few before it ends)."""
        for cid, result, _outcome in self.evaluate(goal, candidates):
            yield cid, result
