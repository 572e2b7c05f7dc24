"""Bandit allocation: proposal slots go to agents by recent payoff, with exploration.

Payoff is improvements per evaluation, decayed each generation so the swarm follows what
works *now*. Every unmuted agent that can act keeps at least one slot when there are
enough slots (nobody starves); the rest is shared by an upper-confidence score.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

DECAY = 0.8
EXPLORATION = 0.6
PRIOR = (0.5, 2.0)   # (improvements, evaluations): an untried agent looks moderately good


@dataclass
class AgentStats:
    evaluations: float = 0.0
    improvements: float = 0.0
    total_evaluations: int = 0
    total_improvements: int = 0

    def decay(self) -> None:
        self.evaluations *= DECAY
        self.improvements *= DECAY

    def payoff(self) -> float:
        return (self.improvements + PRIOR[0]) / (self.evaluations + PRIOR[1])

    def to_json(self) -> dict:
        return {**asdict(self), "payoff": self.payoff()}


def allocate(stats: dict[str, AgentStats], agents: list[str], slots: int, *, favoured=(), muted=()) -> dict[str, int]:
    active = [a for a in agents if a not in muted]
    if not active or slots <= 0:
        return {a: 0 for a in agents}
    total = sum(stats[a].evaluations for a in active) + 1.0
    score = {}
    for a in active:
        s = stats[a]
        bonus = EXPLORATION * math.sqrt(math.log(total + 1.0) / (s.evaluations + 1.0))
        score[a] = (s.payoff() + bonus) * (2.0 if a in favoured else 1.0)
    alloc = {a: 0 for a in agents}
    ranked = sorted(active, key=lambda a: -score[a])
    if slots >= len(active):
        for a in active:
            alloc[a] = 1
        remaining = slots - len(active)
    else:
        for a in ranked[:slots]:
            alloc[a] = 1
        return alloc
    weight = sum(score.values())
    shares = {a: remaining * score[a] / weight for a in active}
    for a in active:
        alloc[a] += int(shares[a])
    left = slots - sum(alloc.values())
    for a in sorted(active, key=lambda a: -(shares[a] - int(shares[a]))):
        if left <= 0:
            break
        alloc[a] += 1
        left -= 1
    return alloc
