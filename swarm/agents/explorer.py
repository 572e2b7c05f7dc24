"""explorer: space-filling samples that respect the constraints.

Each param's values are dealt out in shuffled rounds (a Latin-hypercube over categorical
knobs), so a handful of proposals already covers every value of every param."""
from swarm.agents.base import Context
from swarm.types import CandidateDraft


class Explorer:
    name = "explorer"

    def cannot_act(self, ctx: Context):
        return None

    def propose(self, ctx: Context, n: int) -> list[CandidateDraft]:
        out, tries = [], 0
        decks = {p.name: [] for p in ctx.space.params}
        while len(out) < n and tries < 200 * max(n, 1):
            tries += 1
            point = {}
            for p in ctx.space.params:
                if not decks[p.name]:
                    decks[p.name] = p.values()[:]
                    ctx.rng.shuffle(decks[p.name])
                point[p.name] = decks[p.name].pop()
            if tries > 50 * max(n, 1):  # constraints reject the deck's pairing: sample freely
                point = ctx.space.sample(ctx.rng, ctx.shapes) or point
            if ctx.fresh(point) and point not in [d.params for d in out]:
                out.append(CandidateDraft(point, self.name, "space-filling sample of untried values"))
        return out
