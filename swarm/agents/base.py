"""The Agent contract and the context every agent proposes from."""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Protocol

from kernels.spec import DesignSpace, Shape, Template, Workload
from swarm.types import Candidate, CandidateDraft, Goal, Lesson, candidate_key


@dataclass
class Context:
    goal: Goal
    workload: Workload
    template: Template
    space: DesignSpace              # the design space as narrowed by guidance
    shapes: list[Shape]             # constraints are checked against these
    history: list[Candidate]        # evaluated candidates of this run
    elites: list[Candidate]
    lessons: list[Lesson]
    rng: random.Random
    generation: int
    seen: set = field(default_factory=set)   # keys already proposed in this run
    notes: list = field(default_factory=list)  # free-text guidance

    def legal(self, params: dict) -> bool:
        return not self.space.violations(params, self.shapes)

    def key_of(self, params: dict) -> str:
        return candidate_key(self.template.source(self.template.variant_of(params)), params)

    def is_new(self, params: dict) -> bool:
        return self.key_of(params) not in self.seen

    def fresh(self, params: dict) -> bool:
        return self.legal(params) and self.is_new(params)


class Agent(Protocol):
    """A specialist. ``propose`` MUST return at most ``n`` drafts, each legal in
    ``ctx.space`` for ``ctx.shapes`` and not in ``ctx.seen``, each with a one-line
    rationale. An agent that cannot act returns ``[]`` and says why in ``cannot_act``."""

    name: str

    def cannot_act(self, ctx: Context) -> str | None: ...
    def propose(self, ctx: Context, n: int) -> list[CandidateDraft]: ...


def neighbours(space: DesignSpace, params: dict, name: str) -> list:
    """Adjacent values of one param (ordered by the param's own order)."""
    values = space.param(name).values()
    if params[name] not in values:
        return values
    i = values.index(params[name])
    return [values[j] for j in (i - 1, i + 1) if 0 <= j < len(values)]


def describe_change(before: dict, after: dict) -> str:
    diffs = [f"{k} {before.get(k)}→{v}" for k, v in after.items() if before.get(k) != v]
    return ", ".join(diffs) or "no change"
