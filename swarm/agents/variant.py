"""variant: switch the algorithm template of a good candidate, keeping its other knobs."""
from swarm.agents.base import Context
from swarm.types import CandidateDraft


class Variant:
    name = "variant"

    def cannot_act(self, ctx: Context):
        vp = ctx.template.variant_param
        if not vp or len(ctx.space.param(vp).values()) < 2:
            return "the design space has a single algorithm template"
        return None

    def propose(self, ctx: Context, n: int) -> list[CandidateDraft]:
        vp = ctx.template.variant_param
        if self.cannot_act(ctx):
            return []
        out = []
        bases = ctx.elites or []
        variants = ctx.space.param(vp).values()
        # Best variant-switches first; with no elites yet, the defaults of each variant.
        pool = [(c, v) for c in bases for v in variants if v != c.params[vp]]
        if not bases:
            pool = [(None, v) for v in variants]
        for parent, v in pool:
            if len(out) >= n:
                break
            child = dict(parent.params if parent else ctx.space.default())
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
                why = (f"{vp} {parent.params[vp]}→{v} on #{parent.id} ({parent.score:.2f}x)" if parent
                       else f"seed of the {v} template")
                out.append(CandidateDraft(child, self.name, why, parents=[parent.id] if parent else []))
        return out
