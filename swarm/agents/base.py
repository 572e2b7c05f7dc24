"""The Agent contract and the context every agent proposes from."""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Callable, Protocol

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
    run_id: int = 0
    llm: object = None                         # the run's LLMSession, or why there is none (str)
    emit: Callable = field(default=lambda kind, **data: None)   # typed events of the run
    outcome: Callable = field(default=lambda candidate_id: None)  # stored evaluation (JSON) or None
    natural: dict = field(default_factory=dict)  # the target's natural values on this host (THREADS, VEC)

    def one_template(self) -> bool:
        """The space has a single algorithm template (no variant knob, or one with one value):
        every generated program, and a hand workload pinned to one variant."""
        vp = self.template.variant_param
        return not vp or len(self.space.param(vp).values()) < 2

    def legal(self, params: dict) -> bool:
        return not self.space.violations(params, self.shapes)

    def key_of(self, params: dict) -> str:
        return candidate_key(self.template.source(self.template.variant_of(params)), params)

    def is_new(self, params: dict) -> bool:
        return self.key_of(params) not in self.seen

    def fresh(self, params: dict) -> bool:
        return self.legal(params) and self.is_new(params)

    def used_up(self, most: int = 4096) -> bool:
        """Every legal point of the (steered) space was proposed in this run. Only asked of a
        space of at most ``most`` points (a larger one is never walked: it is not used up)."""
        if self.space.size() > most:
            return False
        return not any(self.is_new(p) for p in self.space.points(self.shapes))

    def draft_key(self, draft: CandidateDraft) -> str:
        """A draft with its own source (an LLM rewrite) is keyed by that source."""
        if draft.source is None:
            return self.key_of(draft.params)
        return candidate_key(draft.source, draft.params)

    def fresh_draft(self, draft: CandidateDraft) -> bool:
        return self.legal(draft.params) and self.draft_key(draft) not in self.seen


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
