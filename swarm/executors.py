"""Executors that evaluate in this process's own sandboxes (tests, CLI without a broker).

The Django/Celery executor lives in ``int21web/runs/celery_executor.py``; both judge through
:func:`swarm.judge.judge`, so a verdict does not depend on which one ran it.
"""
from __future__ import annotations

from swarm.judge import judge, settings_for
from swarm.types import Goal

eval_settings = settings_for   # the settings a goal's candidates are judged with


class LocalExecutor:
    """One evaluation at a time: on a small host, concurrent timing would measure contention."""

    def __init__(self, on_result=None):
        self.on_result = on_result

    def evaluate(self, goal: Goal, candidates):
        if not candidates:
            return
        for c in candidates:
            result, data = judge(goal, c.source, c.params)
            yield c.id, result, data

    def remeasure(self, goal: Goal, candidates, round: int):
        """A fresh evaluation of each (a run confirming its best few before it ends)."""
        for cid, result, _outcome in self.evaluate(goal, candidates):
            yield cid, result
