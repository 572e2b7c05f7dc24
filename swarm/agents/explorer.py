"""explorer: space-filling samples that respect the constraints.

Each param's values are dealt out in shuffled rounds (a Latin-hypercube over categorical
knobs), so a handful of proposals already covers every value of every param. Before anything
has been measured, the hardware knobs start where a person would start them: the target's
natural values on this host (one thread per core, the widest vectors), and the deal covers
the rest of the space; later generations deal those knobs too. A space with one algorithm
template (a generated program: an own op, an engine phase) also starts from its defaults, the
point its generator chose, which the variant agent would otherwise propose: in an engine
phase's hundreds of knobs a random deal is far from it (0.1-0.2x torch against 1.3x)."""
from swarm.agents.base import Context
from swarm.types import CandidateDraft


class Explorer:
    name = "explorer"

    def cannot_act(self, ctx: Context):
        return None

    def propose(self, ctx: Context, n: int) -> list[CandidateDraft]:
        out, tries = [], 0
        natural = {} if ctx.history else {k: v for k, v in ctx.natural.items() if k in ctx.space.names}
        why = "space-filling sample of untried values" + (
            ", hardware knobs at this host's natural " + " ".join(f"{k}={v}" for k, v in natural.items())
            if natural else "")
        decks = {p.name: [] for p in ctx.space.params}
        if n > 0 and not ctx.history and ctx.one_template():
            start, note = {**ctx.space.default(), **natural}, "the program's defaults, where its generator starts it"
            if natural and ctx.legal(start):
                note += ", hardware knobs at this host's natural " + " ".join(f"{k}={v}" for k, v in natural.items())
            else:
                start = ctx.space.default()
            if ctx.fresh(start):
                out.append(CandidateDraft(start, self.name, note))
        while len(out) < n and tries < 200 * max(n, 1):
            tries += 1
            point = {}
            for p in ctx.space.params:
                if not decks[p.name]:
                    decks[p.name] = [natural[p.name]] if p.name in natural else p.values()[:]
                    ctx.rng.shuffle(decks[p.name])
                point[p.name] = decks[p.name].pop()
            if tries > 50 * max(n, 1):  # constraints reject the deck's pairing: sample freely
                point = ctx.space.sample(ctx.rng, ctx.shapes) or point
            if ctx.fresh(point) and point not in [d.params for d in out]:
                out.append(CandidateDraft(point, self.name, why if all(
                    point[k] == v for k, v in natural.items()) else "space-filling sample of untried values"))
        return out

