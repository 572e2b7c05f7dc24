"""variant: switch the algorithm template of a good candidate, keeping its other knobs.

Before anything is measured it proposes each template at this host's natural knobs (one
thread per core, the widest vectors), so the first generation compares the algorithms
where they would actually run. A template that has been measured often enough and stays
well below the best is not proposed again (its slots go to agents that pay)."""
from swarm.agents.base import Context
from swarm.types import CandidateDraft

RULED_OUT_AFTER = 3        # correct measurements of a template…
RULED_OUT_BELOW = 0.8      # …whose best stays under this share of the run's best


class Variant:
    name = "variant"

    def cannot_act(self, ctx: Context):
        if ctx.one_template():
            return "the design space has a single algorithm template"
        vp = ctx.template.variant_param
        if ctx.elites:
            open_ = self._open(ctx)
            if not any(v != c.params[vp] for c in ctx.elites for v in open_):
                return "every other template has been measured well below the best"
        return None

    def _open(self, ctx: Context) -> list:
        """Templates still worth switching to: not measured often enough, or close to the best."""
        vp = ctx.template.variant_param
        best = max((c.score for c in ctx.history), default=0.0)
        out = []
        for v in ctx.space.param(vp).values():
            scores = [c.score for c in ctx.history if c.params.get(vp) == v and c.score > 0]
            if len(scores) < RULED_OUT_AFTER or max(scores) >= RULED_OUT_BELOW * best:
                out.append(v)
        return out

    def propose(self, ctx: Context, n: int) -> list[CandidateDraft]:
        vp = ctx.template.variant_param
        if self.cannot_act(ctx):
            return []
        out = []
        bases = ctx.elites or []
        variants = ctx.space.param(vp).values()
        # Best variant-switches first; with no elites yet, each variant at the natural knobs.
        open_ = self._open(ctx)
        pool = [(c, v) for c in bases for v in variants if v != c.params[vp] and v in open_]
        if not bases:
            pool = [(None, v) for v in variants]
        natural = {k: v for k, v in ctx.natural.items() if k in ctx.space.names}
        for parent, v in pool:
            if len(out) >= n:
                break
            if parent:
                child = dict(parent.params)
            else:
                child = {**ctx.space.default(), **natural}
                if not ctx.legal({**child, vp: v}):
                    child = dict(ctx.space.default())
            child[vp] = v
            if not ctx.fresh(child):
                # Knobs of one template may not suit another: try a few repairs.
                for _ in range(30):
                    alt = ctx.space.sample(ctx.rng, ctx.shapes)
                    if alt is None:
                        break
                    alt[vp] = v
                    for k in child:
                        if ctx.rng.random() < 0.6:
                            alt[k] = child[k]
                    alt[vp] = v
                    if ctx.fresh(alt):
                        child = alt
                        break
                else:
                    continue
            if ctx.fresh(child) and child not in [d.params for d in out]:
                if parent:
                    why = f"{vp} {parent.params[vp]}→{v} on #{parent.id} ({parent.score:.2f}x)"
                elif natural and all(child.get(k) == x for k, x in natural.items()):
                    why = f"the {v} template at this host's natural " + " ".join(f"{k}={x}" for k, x in natural.items())
                else:
                    why = f"the {v} template with its defaults"
                out.append(CandidateDraft(child, self.name, why, parents=[parent.id] if parent else []))
        return out
