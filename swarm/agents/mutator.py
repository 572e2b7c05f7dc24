"""mutator: local moves around the elites (one or two params to an adjacent value).

In a generated program (own ops, engine phases) every fusion group has its own copy of a
knob (``G3_GR``, ``G7_GR``…): hundreds of knobs, each moved alone worth a fraction of a
percent of the whole, below what one measurement can tell apart. So a move of a group's knob
is, some of the time, a *tied* move: the new value goes to every group whose knob of that
name is live and holds the same value now (every matrix-vector product reading one row per
pass, say), a change the size of what the host's noise lets a search see."""
import re

from swarm.agents.base import Context, describe_change, neighbours
from swarm.types import CandidateDraft

GROUP_KNOB = re.compile(r"G\d+_(\w+)$")
TIED = 0.3      # the share of a group knob's moves that carry its peers along


def peers(ctx: Context, params: dict, name: str) -> list[str]:
    """The other groups' knobs of ``name``'s kind, live in ``params`` and at its value."""
    m = GROUP_KNOB.match(name)
    if not m:
        return []
    return [p.name for p in ctx.space.params
            if p.name != name and (o := GROUP_KNOB.match(p.name)) and o.group(1) == m.group(1)
            and params.get(p.name) == params[name] and p.live(params)]


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
            tied = []           # (knob, value, the groups' knobs) of the draft's tied move
            for name in ctx.rng.sample(live, 1 if ctx.rng.random() < 0.7 else min(2, len(live))):
                others = peers(ctx, child, name)
                if others and ctx.rng.random() < TIED:
                    # a tied move explores: any other value, not only the adjacent ones
                    value = ctx.rng.choice([v for v in ctx.space.param(name).values() if v != child[name]])
                    child[name] = value
                    along = [k for k in others if ctx.space.param(k).check(value) is None]
                    for k in along:
                        child[k] = value
                    tied.append((GROUP_KNOB.match(name).group(1), value, [name, *along]))
                    break       # one tied move a draft, the last change made
                options = neighbours(ctx.space, child, name)
                if ctx.rng.random() < 0.15:
                    options = ctx.space.param(name).values()
                child[name] = ctx.rng.choice(options)
            if ctx.fresh(child) and child not in [d.params for d in out]:
                change = describe_change(parent.params, child)
                if tied:
                    [(knob, value, keys)] = tied
                    keys = [k for k in keys if parent.params.get(k) != value]
                    rest = describe_change({k: v for k, v in parent.params.items() if k not in keys},
                                           {k: v for k, v in child.items() if k not in keys})
                    change = f"{knob} → {value} in {len(keys)} groups" + ("" if rest == "no change" else f", {rest}")
                out.append(CandidateDraft(child, self.name, f"{change} on #{parent.id} ({parent.score:.2f}x)",
                                          parents=[parent.id]))
        return out
