"""mutator: local moves around the elites (one or two params to an adjacent value)."""
from swarm.agents.base import Context, describe_change, neighbours
from swarm.types import CandidateDraft


class Mutator:
    name = "mutator"

    def cannot_act(self, ctx: Context):
        return None if ctx.elites else "no correct candidate to mutate yet"

    def propose(self, ctx: Context, n: int) -> list[CandidateDraft]:
        out, tries = [], 0
        movable = [p for p in ctx.space.params if len(p.values()) > 1]
        if not ctx.elites or not movable:
            return []
        while len(out) < n and tries < 100 * n:
            tries += 1
            # Half the moves start from the best; the rest from a tournament (the better elites
            # are picked more often), so a second basin is not abandoned at once.
            parent = (ctx.elites[0] if ctx.rng.random() < 0.5 else
                      min(ctx.rng.sample(ctx.elites, min(2, len(ctx.elites))), key=lambda c: -c.score))
            child = dict(parent.params)
            # only knobs that do something there (a GEMM's packing knobs are dead under its dot tiles)
            live = [p.name for p in movable if p.live(child)]
            if not live:
                continue
            for name in ctx.rng.sample(live, 1 if ctx.rng.random() < 0.7 else min(2, len(live))):
                options = neighbours(ctx.space, child, name)
                if ctx.rng.random() < 0.15:
                    options = ctx.space.param(name).values()
                child[name] = ctx.rng.choice(options)
            if ctx.fresh(child) and child not in [d.params for d in out]:
                out.append(CandidateDraft(child, self.name,
                                          f"{describe_change(parent.params, child)} on #{parent.id} "
                                          f"({parent.score:.2f}x)", parents=[parent.id]))
        return out
