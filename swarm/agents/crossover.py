"""crossover: recombine two elites (each param from one parent or the other)."""
from swarm.agents.base import Context
from swarm.types import CandidateDraft


class Crossover:
    name = "crossover"

    def cannot_act(self, ctx: Context):
        return None if len(ctx.elites) >= 2 else "needs two correct candidates to recombine"

    def propose(self, ctx: Context, n: int) -> list[CandidateDraft]:
        if len(ctx.elites) < 2:
            return []
        out, tries = [], 0
        while len(out) < n and tries < 100 * n:
            tries += 1
            a, b = ctx.rng.sample(ctx.elites[:6], 2)
            child = {k: (a.params[k] if ctx.rng.random() < 0.5 else b.params[k]) for k in a.params}
            if ctx.fresh(child) and child not in [d.params for d in out]:
                took = sorted(k for k in child if child[k] != a.params[k])
                out.append(CandidateDraft(child, self.name,
                                          f"#{a.id} with {', '.join(took) or 'nothing'} from #{b.id}",
                                          parents=[a.id, b.id]))
        return out
