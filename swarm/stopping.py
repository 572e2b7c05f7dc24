"""Why a run stops, if it does, before its next generation: the one list of stop rules, in
the order they are asked (Engine.step asks before planning each generation)."""
from __future__ import annotations

from swarm import registry


def stop_reason(run, evaluated: list, steering, ctx) -> str | None:
    """The sentence the run ends with, or None to go on. ``run``: the RunRecord; ``evaluated``:
    its judged candidates; ``steering``: the guidance in force; ``ctx``: the generation's Context
    (its steered space and what the run has proposed)."""
    b = run.goal.budget
    best = max((c.score for c in evaluated if c.result.ok), default=0.0)
    target = steering.target_speedup or b.target_speedup
    if steering.stop:
        return "stopped by guidance"
    if len(evaluated) >= b.evaluations:
        return f"evaluation budget of {b.evaluations} spent"
    if b.wall_seconds is not None and run.active_seconds >= b.wall_seconds:
        return f"wall-clock budget of {b.wall_seconds:g} s spent"
    if target and best >= target:
        return f"target speedup {target:g}x reached ({best:.2f}x)"
    # before stagnation: nothing new to try is why it stopped improving (a model's rewrites
    # are not points of the space, so a team with one is never used up this way)
    if not any(getattr(registry.get(a), "needs_model", False) for a in run.goal.team) and ctx.used_up():
        return "the design space is used up: every legal point was tried"
    if b.stagnation_generations and run.stagnant >= b.stagnation_generations:
        return f"no improvement in {run.stagnant} generations"
    return None
