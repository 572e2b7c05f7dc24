"""seeded: start from what earlier runs learned (best configs, then their neighbourhoods) — for a
generated program also the configs composed from its groups' lessons (swarm/knowledge/groups.py)."""
from swarm.agents.base import Context, describe_change, neighbours
from swarm.types import CandidateDraft


class Seeded:
    name = "seeded"

    def cannot_act(self, ctx: Context):
        if ctx.goal.cold:
            return "the run was started cold (no lessons)"
        if not any(lsn.kind == "best_config" for lsn in ctx.lessons):
            return "no lessons from earlier runs on this workload and target"
        return None

    def propose(self, ctx: Context, n: int) -> list[CandidateDraft]:
        if self.cannot_act(ctx):
            return []
        out = []
        configs = sorted((lsn for lsn in ctx.lessons if lsn.kind == "best_config"),
                         key=lambda lsn: -float(lsn.data.get("score", 0.0)))
        for lsn in configs:
            params = _completed(ctx, lsn.data.get("params", {}))
            if ctx.fresh(params) and params not in [d.params for d in out]:
                note = (f"a config {lsn.text}" if lsn.data.get("composed") else
                        f"best config from lesson #{lsn.id} ({lsn.data.get('score', 0):.2f}x at {lsn.shape_bucket})")
                out.append(CandidateDraft(params, self.name, note))
            if len(out) >= n:
                return out
        # Then the neighbourhood of the remembered configs (shapes differ a little).
        effects = {lsn.data["param"]: lsn.data["best"] for lsn in ctx.lessons if lsn.kind == "param_effect"}
        for _ in range(40 * n):
            if len(out) >= n or not configs:
                break
            base = _completed(ctx, ctx.rng.choice(configs).data.get("params", {}))
            child = dict(base)
            name = ctx.rng.choice(ctx.space.names)
            child[name] = ctx.rng.choice(neighbours(ctx.space, child, name) or [child[name]])
            for k, v in effects.items():
                if k in child and ctx.rng.random() < 0.3:
                    try:
                        child[k] = type(child[k])(v)
                    except (TypeError, ValueError):
                        pass
            if ctx.fresh(child) and child not in [d.params for d in out]:
                out.append(CandidateDraft(child, self.name,
                                          f"near a remembered best config: {describe_change(base, child)}"))
        return out


def _completed(ctx: Context, remembered: dict) -> dict:
    """A remembered config in today's space: params the space no longer has are dropped, and
    params added since (a template grew a knob) take their defaults, which reproduce the
    kernel as it was when the lesson was learnt."""
    return {**ctx.space.default(), **{k: v for k, v in remembered.items() if k in ctx.space.names}}
