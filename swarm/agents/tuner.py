"""tuner: Optuna (TPE; CMA-ES when every knob is a numeric range) via ask-and-tell,
seeded with the whole history of the run, failures scored 0 (infinitely slow)."""
from __future__ import annotations

import logging

from swarm.agents.base import Context
from swarm.types import CandidateDraft

logging.getLogger("optuna").setLevel(logging.WARNING)


class Tuner:
    name = "tuner"

    def cannot_act(self, ctx: Context):
        try:
            import optuna  # noqa: F401
        except ImportError:
            return "optuna is not installed"
        if not ctx.history:
            # TPE with no observations samples at random; the explorer's first deal does better.
            return "nothing measured yet to model (the explorer samples first)"
        return None

    def _distributions(self, ctx: Context):
        from optuna.distributions import CategoricalDistribution, IntDistribution
        dists = {}
        for p in ctx.space.params:
            if p.kind == "int":
                dists[p.name] = IntDistribution(p.low, p.high, step=p.step)
            else:
                dists[p.name] = CategoricalDistribution(list(p.values()))
        return dists

    def propose(self, ctx: Context, n: int) -> list[CandidateDraft]:
        import optuna
        from optuna.trial import TrialState, create_trial
        dists = self._distributions(ctx)
        numeric = all(p.kind == "int" for p in ctx.space.params)
        seed = ctx.rng.randrange(2**31)
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        sampler = (optuna.samplers.CmaEsSampler(seed=seed) if numeric
                   else optuna.samplers.TPESampler(seed=seed, n_startup_trials=8, multivariate=True))
        study = optuna.create_study(direction="maximize", sampler=sampler)
        for c in ctx.history:
            # Points outside the (possibly narrowed) space cannot be told to this study.
            if set(c.params) != set(dists) or any(ctx.space.param(k).check(v) for k, v in c.params.items()):
                continue
            study.add_trial(create_trial(params=c.params, distributions=dists, value=c.score))
        out, tries = [], 0
        while len(out) < n and tries < 30 * n:
            tries += 1
            trial = study.ask(dists)
            params = dict(trial.params)
            if ctx.fresh(params) and params not in [d.params for d in out]:
                study.tell(trial, state=TrialState.PRUNED)  # its real value arrives next generation
                out.append(CandidateDraft(params, self.name,
                                          f"{'CMA-ES' if numeric else 'TPE'} suggestion after "
                                          f"{len(ctx.history)} observations"))
            else:
                study.tell(trial, state=TrialState.FAIL)
        return out
