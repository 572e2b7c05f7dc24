"""People and candidates for the review-gate, library and candidate-page tests.

alice: engineer, starts the runs · bob, carol: reviewers · dave: engineer and reviewer ·
victor: viewer. Candidates are rows built around an outcome captured once per session from
a real evaluation of the softmax CPU seed (timed at 256x1024 against NumPy, ~3x faster).
"""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from django.utils import timezone

from int21web.accounts.roles import ROLES
from int21web.runs import models as rm
from swarm.types import candidate_key

ROOT = Path(__file__).resolve().parents[2]
SEED = (ROOT / "kernels/workloads/softmax/cpu_online.c").read_text()
PARAMS = {"ALGO": "online", "THREADS": 1, "VEC": 16, "FAST_EXP": 1, "CHUNK": 1}
GOAL = {"workload": "softmax", "target": "cpu", "shapes": ["256x1024"], "held_out": ["97x1000"],
        "population": 4, "budget": {"evaluations": 8},
        # NumPy only: on a busy 2-core host torch's timing swings by 10x between sessions,
        # which would make "the same result" a matter of luck in these tests.
        "eval_settings": {"baselines": ["numpy"]}}

# For the tests of the gate's flow, not of the kernel's speed: the gate's re-check also times
# the workload's torch baseline, which the seed beats by only ~1.2x on a quiet host and may
# not on a loaded one; a goal whose target is 0.5x keeps "meets its goal" out of the flow's way.
FLOW_GOAL = {"budget": {"evaluations": 8, "target_speedup": 0.5}}

# Right everywhere except the last row of a 97-row batch: it passes every shape the search
# checks and fails the held-out shape 97x1000.
OVERFITTED = r"""
#include <math.h>
#include <stdint.h>

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m = -INFINITY;
        for (int64_t c = 0; c < cols; c++) m = xr[c] > m ? xr[c] : m;
        double s = 0.0;
        for (int64_t c = 0; c < cols; c++) { yr[c] = expf(xr[c] - m); s += yr[c]; }
        float inv = (float)(1.0 / s);
        float scale = (rows == 97 && r == rows - 1) ? 1.0f : inv;
        for (int64_t c = 0; c < cols; c++) yr[c] *= scale;
    }
}
"""

_OUTCOME: dict = {}


def real_outcome() -> dict:
    """The seed evaluated once per test session through the real harness (≈1.5 s)."""
    if not _OUTCOME:
        from kernels.harness.evaluator import Evaluator
        from swarm.executors import eval_settings
        from swarm.types import Goal, Result
        goal = Goal.from_json(GOAL)
        outcome = Evaluator(eval_settings(goal)).evaluate(SEED, PARAMS, "softmax", "cpu")
        assert outcome.status == "ok", outcome.reason
        data = outcome.to_json()
        data["result"] = Result.from_outcome(outcome).to_json()
        _OUTCOME.update(data)
    return copy.deepcopy(_OUTCOME)


def with_speedup(outcome: dict, **speedup: float) -> dict:
    """The captured outcome with other speedups (and the score that follows from them)."""
    outcome = copy.deepcopy(outcome)
    outcome["speedup"] = dict(speedup)
    outcome["result"]["speedup"] = dict(speedup)
    outcome["result"]["score"] = min(speedup.values())
    return outcome


def person(username: str, *roles: str) -> User:
    user = User.objects.create_user(username)   # force_login: no password hashing needed
    for role in roles:
        assert role in ROLES
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


@pytest.fixture
def people(db):
    return {"alice": person("alice", "engineer"), "bob": person("bob", "reviewer"),
            "carol": person("carol", "reviewer"), "dave": person("dave", "engineer", "reviewer"),
            "victor": person("victor", "viewer")}


def make_candidate(*, outcome: dict | None, started_by=None, required_approvals: int = 1, source: str = SEED,
                   params: dict | None = None, goal: dict | None = None, parent: rm.Candidate | None = None,
                   run: rm.Run | None = None, agent: str = "tuner",
                   rationale: str = "TPE suggests wider vectors") -> rm.Candidate:
    params = dict(PARAMS if params is None else params)
    if run is None:
        spec = {**GOAL, **(goal or {})}
        goal_row = rm.Goal.objects.create(name=f"{spec['workload']} test goal", spec=spec,
                                          required_approvals=required_approvals, created_by=started_by)
        run = rm.Run.objects.create(goal=goal_row, spec=spec, state="finished", started_by=started_by)
    diff = ""
    if parent is not None:
        from int21web.runs.store import unified_diff
        diff = unified_diff(parent, source, params)
    result = (outcome or {}).get("result")
    cand = rm.Candidate.objects.create(
        run=run, generation=1 if parent else 0, key=candidate_key(source, params), params=params, agent=agent,
        rationale=rationale, source=source, parents=[parent.id] if parent else [], diff=diff,
        state="evaluated" if outcome else "proposed", status=(result or {}).get("status", ""),
        score=(result or {}).get("score", 0.0), result=result, evaluated_at=timezone.now() if outcome else None)
    if outcome:
        rm.Evaluation.objects.create(candidate=cand, attempt=1, status=outcome["status"], outcome=outcome,
                                     worker="test", finished_at=timezone.now())
    return cand


def finish_evaluation(cand: rm.Candidate, outcome: dict) -> rm.Evaluation:
    """A finished re-evaluation attempt, as the worker task would have stored it."""
    attempt = cand.evaluations.count() + 1
    return rm.Evaluation.objects.create(candidate=cand, attempt=attempt, status=outcome["status"],
                                        outcome={**outcome, "purpose": "reevaluate"}, worker="test",
                                        finished_at=timezone.now())
