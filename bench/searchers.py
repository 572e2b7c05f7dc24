"""The swarm and its peers, on equal terms: the same template and design space, the same
constraints at the same shape, every point scored by the same harness measurement (the
shared :class:`bench.measure.Table`). Each searcher returns its trace: the distinct points
it evaluated, in order, as ``(params, score)``; a point asked for twice counts once.

How Kernel Tuner is driven (``kernel_tuner_trace``): its own ``tune_kernel`` entry point,
in simulation mode, with its ``SimulationRunner`` replaced for the call by
:class:`HarnessRunner`. Kernel Tuner builds its search space from our params and
constraints (its own constraint solver, shape dims substituted as literals), applies its
evaluation budget (``max_fevals``, counting distinct configurations as its runners do)
and runs its strategy unchanged; the runner answers each configuration the strategy picks
with our sandboxed measurement (objective ``speedup``, higher is better; a failed
candidate becomes ``RuntimeFailedConfig``, which Kernel Tuner scores as infinitely bad).
Kernel Tuner's C backend is not used: it would load every candidate into this process
with ctypes and time it there, and untrusted kernel code never runs in the bench process.
"""
from __future__ import annotations

import json
import random
import re
import warnings
from unittest import mock

import numpy as np

from bench.measure import Table, TableExecutor, shape_of
from kernels import workloads
from swarm.events import ListSink
from swarm.generation import Engine
from swarm.knowledge import InMemoryKnowledge
from swarm.store import InMemoryStore
from swarm.types import Budget, Goal

# Kernel Tuner enumerates every legal configuration before it searches; past this many
# points (matmul: 34M, 21M legal, ~60 s and ~15 GB here) it is not run.
KT_MAX_SPACE = 2_000_000
KT_STRATEGIES = ("bayes_opt", "genetic_algorithm")


def _template(table: Table):
    return workloads.get(table.workload).template("cpu")


# --------------------------------------------------------------------------- the swarm

class Trace(list):
    """A swarm run's (params, score) per evaluation, and ``best``: the params of the kernel the
    run itself reported as its best (its confirmed best), which the next run's lessons start from."""

    best: dict | None = None


def swarm_trace(table: Table, shape: str, budget: int, seed: int, knowledge, cold: bool) -> Trace:
    """One whole swarm run (all agents, population 8, no stagnation stop)."""
    store = InMemoryStore()
    eng = Engine(store, TableExecutor(table), knowledge, ListSink(), fingerprint="bench")
    goal = Goal(workload=table.workload, shapes=[shape] if shape else [], seed=seed, cold=cold, population=8,
                budget=Budget(evaluations=budget, stagnation_generations=None))
    rid = eng.start(goal)
    eng.run(rid)
    cands = sorted(store.candidates(rid), key=lambda c: c.id)
    trace = Trace((c.params, c.score) for c in cands if c.result is not None)
    best_id = store.load_run(rid).best_id
    trace.best = next((c.params for c in cands if c.id == best_id), None)
    return trace


def swarm_run(table, shape, budget, seed, knowledge, cold) -> list[float]:
    """Best-so-far score after each evaluation."""
    from bench.measure import best_so_far
    return best_so_far([s for _, s in swarm_trace(table, shape, budget, seed, knowledge, cold)])


# --------------------------------------------------------------------------- random search

def random_trace(table: Table, shape: str, budget: int, seed: int) -> list:
    wl = workloads.get(table.workload)
    tpl = wl.template("cpu")
    rng = random.Random(f"random:{seed}")
    shp = shape_of(wl, shape)
    seen, out = set(), []
    tries = 0
    while len(out) < budget and tries < budget * 200:
        tries += 1
        p = tpl.space.sample(rng, [shp])
        if p is None:
            break
        k = json.dumps(p, sort_keys=True)
        if k in seen:
            continue
        seen.add(k)
        out.append((p, table.measure(shape, tpl.source(tpl.variant_of(p)), p).score))
    return out


def random_run(table, shape, budget, seed) -> list[float]:
    from bench.measure import best_so_far
    return best_so_far([s for _, s in random_trace(table, shape, budget, seed)])


# --------------------------------------------------------------------------- Optuna alone

def optuna_trace(table: Table, shape: str, budget: int, seed: int) -> list:
    """Optuna's TPE sampler (multivariate, 8 start-up trials: the settings of the swarm's
    tuner agent) by ask-and-tell. An illegal point is told score 0 without being measured;
    a point asked again is told its known score and not counted."""
    import optuna
    from optuna.distributions import CategoricalDistribution, IntDistribution
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    wl = workloads.get(table.workload)
    tpl = wl.template("cpu")
    shp = wl.shape_from_text(shape)
    dists = {p.name: (IntDistribution(p.low, p.high, step=p.step) if p.kind == "int"
                      else CategoricalDistribution(list(p.values()))) for p in tpl.space.params}
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(
        seed=seed, n_startup_trials=8, multivariate=True))
    seen: dict[str, float] = {}
    out, asks = [], 0
    while len(out) < budget and asks < budget * 50:
        asks += 1
        trial = study.ask(dists)
        p = dict(trial.params)
        k = json.dumps(p, sort_keys=True)
        if tpl.space.violations(p, [shp]):
            study.tell(trial, 0.0)
        elif k in seen:
            study.tell(trial, seen[k])
        else:
            seen[k] = table.measure(shape, tpl.source(tpl.variant_of(p)), p).score
            study.tell(trial, seen[k])
            out.append((p, seen[k]))
    return out


# --------------------------------------------------------------------------- Kernel Tuner

def kernel_tuner_space(table: Table, shape: str):
    """(tune_params, restrictions, problem_size) in Kernel Tuner's terms, or a reason it
    cannot take this space."""
    wl = workloads.get(table.workload)
    tpl = wl.template("cpu")
    if tpl.space.size() > KT_MAX_SPACE:
        return None, (f"not run: Kernel Tuner enumerates every legal configuration before searching, and "
                      f"this space has {tpl.space.size():,} points (over {KT_MAX_SPACE:,})")
    dims = wl.shape_from_text(shape).as_dict()
    restrictions = []
    for c in tpl.space.constraints:
        expr = c.expr
        for name, value in dims.items():
            expr = re.sub(rf"\b{name}\b", str(value), expr)
        restrictions.append(expr)
    tune_params = {p.name: list(p.values()) for p in tpl.space.params}
    return (tune_params, restrictions, tuple(dims.values())), None


def _kt_runner_class():
    from kernel_tuner import util
    from kernel_tuner.runners.runner import Runner

    class HarnessRunner(Runner):
        """Kernel Tuner's runner seam, answered by the sandboxed harness (through the table)."""

        def __init__(self, table: Table, shape: str, names: list[str]):
            super().__init__()
            self.table, self.shape, self.names = table, shape, names
            self.tpl = _template(table)
            self.trace: list = []
            self.visited: dict[str, float] = {}
            self.simulation_mode = True
            self.dev = type("Device", (), {"name": "int21 harness (sandboxed child processes)",
                                           "max_threads": 1 << 30})()

        def get_device_info(self):
            return self.dev

        def get_environment(self, tuning_options):
            return {"device_name": self.dev.name, "runner": "bench.searchers.HarnessRunner"}

        def run(self, parameter_space, tuning_options):
            results = []
            for element in parameter_space:
                if tuning_options.budget.is_done():
                    results.append(None)
                    continue
                params = dict(zip(self.names, element))
                key = ",".join(str(v) for v in element)
                if key not in self.visited:
                    r = self.table.measure(self.shape, self.tpl.source(self.tpl.variant_of(params)), params)
                    self.visited[key] = r.score if r.ok else 0.0
                    self.trace.append((params, self.visited[key]))
                    tuning_options.budget.add_evaluations(1)
                score = self.visited[key]
                result = dict(params)
                if score > 0:
                    result["speedup"] = score
                    result["time"] = 1.0 / score
                else:
                    result["speedup"] = result["__error__"] = util.RuntimeFailedConfig()
                result.update(compile_time=0.0, verification_time=0.0, benchmark_time=0.0,
                              strategy_time=0.0, framework_time=0.0, timestamp="")
                results.append(result)
            return results

    return HarnessRunner


def kernel_tuner_trace(table: Table, shape: str, budget: int, seed: int, strategy: str) -> list:
    import kernel_tuner
    import kernel_tuner.runners.simulation as simulation
    space, why = kernel_tuner_space(table, shape)
    if space is None:
        raise NotRunnable(why)
    tune_params, restrictions, problem_size = space
    tpl = _template(table)
    runner = _kt_runner_class()(table, shape, list(tune_params))
    # Kernel Tuner's strategies draw from the global generators.
    random.seed(seed)
    np.random.seed(seed)
    with mock.patch.object(simulation, "SimulationRunner", lambda *a, **k: runner), warnings.catch_warnings():
        warnings.simplefilter("ignore")   # about GPU thread-block params and host arguments: not ours
        kernel_tuner.tune_kernel(
            "kernel", tpl.source(next(iter(tpl.variants))), problem_size, [], tune_params,
            restrictions=restrictions, lang="C", strategy=strategy,
            strategy_options={"max_fevals": budget}, simulation_mode=True, cache=None,
            objective="speedup", objective_higher_is_better=True, quiet=True, verbose=False)
    return runner.trace[:budget]


class NotRunnable(Exception):
    """A searcher that cannot take this space; the message says why (reported, not fatal)."""


# --------------------------------------------------------------------------- registry

SEARCHERS = {
    # name: (description, callable(table, shape, budget, seed) -> trace)
    "swarm_cold": "the swarm, cold (no lessons): explorer, mutator, crossover, tuner, variant, seeded",
    "swarm_warm": "the swarm with the lessons of an earlier cold run (same seed) on the same goal",
    "kt_bayes_opt": "Kernel Tuner 'bayes_opt' (Gaussian-process Bayesian optimisation)",
    "kt_genetic_algorithm": "Kernel Tuner 'genetic_algorithm'",
    "optuna_tpe": "Optuna TPE alone (multivariate, ask-and-tell)",
    "random": "random search over legal points",
}


def run_searcher(name: str, table: Table, shape: str, budget: int, seed: int,
                 teacher: InMemoryKnowledge | None = None) -> list:
    if name == "swarm_cold":
        return swarm_trace(table, shape, budget, seed, InMemoryKnowledge(), cold=True)
    if name == "swarm_warm":
        return swarm_trace(table, shape, budget, seed, teacher or InMemoryKnowledge(), cold=False)
    if name.startswith("kt_"):
        return kernel_tuner_trace(table, shape, budget, seed, name[3:])
    if name == "optuna_tpe":
        return optuna_trace(table, shape, budget, seed)
    if name == "random":
        return random_trace(table, shape, budget, seed)
    raise KeyError(name)
