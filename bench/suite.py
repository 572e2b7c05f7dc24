"""One benchmark run, side by side: kernels vs their baselines and the roofline, and the
swarm vs its peer searchers at equal evaluation budgets. ``run(plan)`` returns the result
as JSON-ready data; ``bench.report`` turns it into docs/benchmarks.md and the HTML report.
"""
from __future__ import annotations

import datetime
import itertools
import os
import platform
import random
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field

from bench import gpu, kernels_vs, searchers, targets
from bench.measure import Table, TimeUp, best_so_far, evals_to
from kernels import workloads
from kernels.targets.cpu import cpu_fingerprint
from swarm.knowledge import InMemoryKnowledge
from swarm.progress import Bar

# (search shape, [kernel shapes]) per workload. Full: the kernels are timed at the shapes of
# the swarm issue's targets; the searches run on cheaper shapes of the same kind (the same
# row length; half the sequence) so that three seeds of six searchers at budgets 25 and 50
# fit in 90 minutes on a 2-core host (one evaluation at 4096x4096 takes ~5 s there, at
# 1024x4096 ~1.5 s; kda at T=1024 ~3.5 s, its torch baselines being slow). matmul searches
# at 1024^3 itself (~1.5 s an evaluation): the cache blocking that wins at 512^3, where
# everything fits in L2/L3, is not the one that wins at the targets' sizes.
FULL_SHAPES = {
    "softmax": ("1024x4096", ["4096x4096"]),
    "rmsnorm": ("1024x4096", ["4096x4096"]),
    "layernorm": ("1024x4096", ["4096x4096"]),
    "matmul": ("1024x1024x1024", ["1024x1024x1024", "2048x2048x2048"]),
    "kda": ("1x512x4x64x64", ["1x1024x4x64x64"]),
}
QUICK_SHAPES = {
    "softmax": ("256x2048", ["256x2048"]),
    "rmsnorm": ("256x2048", ["256x2048"]),
    "layernorm": ("256x2048", ["256x2048"]),
    "matmul": ("512x512x512", ["512x512x512"]),
    "kda": ("1x256x2x64x64", ["1x256x2x64x64"]),
}


@dataclass
class Plan:
    quick: bool = False
    workloads: list = field(default_factory=lambda: list(workloads.names()))
    budgets: list = field(default_factory=lambda: [25, 50])
    seeds: int = 3
    sessions: int = 3                 # kernel comparisons: harness sessions per kernel
    min_calls: int = 20               # timed calls per implementation, kernel comparisons
    search_min_calls: int = 10        # timed calls per implementation, search measurements
    search_eval: dict = field(default_factory=dict)   # EvalSettings of search measurements beyond the defaults
    timing_budget_s: float | None = None              # kernel comparisons: seconds per session (None: the harness's)
    searchers: list = field(default_factory=lambda: list(searchers.SEARCHERS))
    shapes: dict = field(default_factory=dict)       # workload -> (search shape, [kernel shapes])
    compile_baseline: bool = True     # torch.compile in the kernel comparison
    gpu: bool = True
    search_workloads: list = field(default_factory=list)   # empty: every workload is searched
    gpu_only: bool = False            # the GPU section alone (bench/gpu_check.sh on a GPU host)
    confirm_top: int = 6              # search: the best points measured again before scoring…
    confirm_extra: int = 2            # …this many more times each (score: median)
    sweep_up_to: int = 0              # search: measure every legal point of a space this small
    random_seeds: int = 0             # search: more seeds for random search alone (its hit rate)
    shape_runs: bool = True           # a swarm run at each kernel shape, with the search's lessons
    deadline_minutes: float = 85.0    # past this, remaining tasks are skipped (and reported)
    command: str = ""

    def searched(self) -> list:
        """The workloads searched in this run; the others get one fixed-budget swarm run."""
        if self.search_workloads:
            return [w for w in self.workloads if w in self.search_workloads] or list(self.workloads)
        return list(self.workloads)

    @classmethod
    def make(cls, quick: bool, **over) -> "Plan":
        # --quick: search points checked on 2 seeds at their own shapes (not the workload's typical
        # 4096x4096 each time), without re-timing slow sessions; the kernel comparisons keep the defaults
        base = (dict(budgets=[10, 20, 40], seeds=3, sessions=1, min_calls=10, deadline_minutes=9.0,
                     search_workloads=["softmax"], shapes=dict(QUICK_SHAPES),
                     search_eval={"seeds": 2, "retime": 0, "typical_checks": False})
                if quick else dict(shapes=dict(FULL_SHAPES)))
        base.update({k: v for k, v in over.items() if v is not None})
        return cls(quick=quick, **base)


class Clock:
    def __init__(self, minutes: float):
        self.t0 = time.monotonic()
        self.deadline = self.t0 + 60 * minutes

    def seconds(self) -> float:
        return time.monotonic() - self.t0

    def out(self) -> bool:
        return time.monotonic() > self.deadline


class Progress:
    """The run's tasks on the command line's progress bar (a line per task when the stream is
    not a terminal)."""

    def __init__(self, stream, total: int, clock: Clock):
        self.total, self.clock = max(total, 1), clock
        self.done, self.label, self.measured = 0, "", 0
        self.bar = Bar(stream, width=28)
        self.tty = self.bar.tty

    def task(self, label: str) -> None:
        self.label = label
        self._draw(newline=not self.tty)

    def finished(self) -> None:
        self.done += 1
        if self.tty:
            self._draw(newline=False)

    def measured_one(self, *_a, **_k) -> None:
        self.measured += 1
        if self.tty:
            self._draw(newline=False)

    def close(self) -> None:
        self._draw(newline=True)

    def _draw(self, newline: bool) -> None:
        elapsed = self.clock.seconds()
        eta = f" · ~{elapsed / self.done * (self.total - self.done) / 60:4.1f} min left" if self.done else ""
        self.bar.draw(self.done, self.total, f"{self.done}/{self.total} · {self.label[:48]:<48} · "
                                             f"{self.measured} measured · {elapsed / 60:4.1f} min{eta}",
                      newline=newline)


def host_info() -> dict:
    import numpy
    versions = {"python": platform.python_version(), "numpy": numpy.__version__}
    for mod in ("torch", "kernel_tuner", "optuna"):
        try:
            versions[mod] = __import__(mod).__version__
        except Exception as exc:  # reported, not fatal
            versions[mod] = f"unavailable: {type(exc).__name__}"
    load = os.getloadavg()
    fp = cpu_fingerprint()
    return {"hostname": platform.node() or "host", "fingerprint": fp, "kernel": platform.release(),
            "versions": versions, "load_average_at_start": [round(x, 2) for x in load],
            "shared_or_noisy": load[0] > 0.5 * (fp.get("cores") or os.cpu_count() or 1),
            "openblas_env_of_bench_process": {v: os.environ.get(v) for v in kernels_vs.OPENBLAS_VARS}}


def _stats(values: list) -> dict:
    vals = [v for v in values if v is not None]
    if not vals:
        return {"median": None, "min": None, "max": None, "per_seed": values}
    return {"median": statistics.median(vals), "min": min(vals), "max": max(vals), "per_seed": values}


def _at(curve: list, budget: int):
    return curve[min(budget, len(curve)) - 1] if curve else 0.0


def _tasks(plan: Plan) -> int:
    n = (1 if plan.gpu_only else 2) + (1 if plan.gpu else 0)
    for w in ([] if plan.gpu_only else plan.workloads):
        if w not in plan.searched():
            n += 1 + plan.sessions * len(plan.shapes[w][1])
            continue
        once = sum(1 for s in plan.searchers if not s.startswith("kt_"))
        kt = sum(len(plan.budgets) for s in plan.searchers if s.startswith("kt_"))
        n += plan.seeds * (once + kt) + (1 if plan.confirm_top else 0) + plan.sessions * len(plan.shapes[w][1])
        n += 1 if plan.sweep_up_to else 0
        if "random" in plan.searchers:
            n += max(0, plan.random_seeds - plan.seeds)
        if plan.shape_runs:
            n += sum(1 for shape in plan.shapes[w][1] if shape != plan.shapes[w][0])
    return n


def sweep(wname: str, table: Table, shape: str, limit: int, progress: Progress, stop_at: float) -> dict:
    """Measure every legal point of the space at ``shape`` not yet in the table (at most
    ``limit`` points; in a shuffled order, so a slow phase of the host lands on points all
    over the space rather than along one parameter). Random search's expected evaluations
    then follow from the whole landscape instead of from its own draws."""
    wl = workloads.get(wname)
    tpl = wl.template("cpu")
    # Enumerate no further than the limit: matmul's space has 34 million points.
    points = list(itertools.islice(tpl.space.points([wl.shape_from_text(shape)]), limit + 1))
    out = {"legal_points": len(points), "status": "complete", "measured_by_sweep": 0}
    if len(points) > limit:
        out.update(legal_points=None, status=f"not swept: more than {limit} legal points "
                                             f"({tpl.space.size():,} points before constraints)")
        return out
    progress.task(f"{wname}: measuring all {len(points)} points of the space")
    random.Random(f"sweep:{wname}:{shape}").shuffle(points)
    table.deadline = stop_at
    try:
        for p in points:
            if table.key(shape, p) not in table.rows:
                table.measure(shape, tpl.source(tpl.variant_of(p)), p)
                out["measured_by_sweep"] += 1
    except TimeUp:
        out["status"] = "incomplete: this workload's share of the time limit was spent"
    finally:
        table.deadline = None
        progress.finished()
    out["points"] = points   # popped by search_section once the best is known
    return out


def shape_run(wname: str, table: Table, shape: str, search_best: dict, lessons, budget: int,
              progress: Progress) -> dict:
    """One swarm run at a kernel shape other than the search shape, starting from the
    search's lessons, as a user runs the factory at the shape they care about (the best point
    of a 16 MB problem that stays in the last-level cache is not the best of a 64 MB one that
    streams through memory). The search's best is measured there too; the best three are
    confirmed (median of three measurements) and the best of them is the kernel compared."""
    progress.task(f"{wname}: swarm at {shape} with the search's lessons")
    tpl = workloads.get(wname).template("cpu")
    out = {"shape": shape, "budget": budget, "lessons_from": "the search's first cold run"}
    try:
        trace = searchers.swarm_trace(table, shape, budget, 0, lessons, cold=False)
        table.measure(shape, tpl.source(tpl.variant_of(search_best)), search_best)
        out["confirmation_evaluations"] = table.confirm(shape, top=3, extra=2)
    except TimeUp:
        out["status"] = "skipped: the run's time limit was reached"
        progress.finished()
        return out
    progress.finished()
    best = table.best(shape)
    out.update(status="ok", trace=[[p, table.score(shape, p)] for p, _ in trace],
               best={"params": best["params"], "score": best["result"]["score"]},
               search_best_here=table.score(shape, search_best))
    return out


def search_section(wname: str, table: Table, shape: str, plan: Plan, progress: Progress, clock: Clock,
                   stop_at: float, teachers: dict | None = None) -> dict:
    """Every searcher at every budget over every seed, on the shared table. Seeds are the
    outer loop, so a run cut short by its time limit loses whole seeds, not whole searchers.
    The warm swarm of seed s starts with the lessons of the cold swarm of seed s (the run
    just before it on the same goal); ``teachers`` receives those lessons, by seed."""
    top = max(plan.budgets)
    out = {"shape": shape, "space_size": workloads.get(wname).template("cpu").space.size(),
           "budgets": plan.budgets, "seeds": plan.seeds, "searchers": {}}
    order = sorted(plan.searchers, key=lambda s: (s != "swarm_cold", s))   # the teacher first
    for name in order:
        out["searchers"][name] = {"description": searchers.SEARCHERS[name], "status": "ok", "runs": {},
                                  "best_by_budget": {}}
    table.deadline = stop_at
    raw: dict = {}   # searcher → budget → seed → trace, scored once confirmation is done
    for seed in range(max(plan.seeds, plan.random_seeds)):
        teacher = None
        for name in order:
            if seed >= plan.seeds and name != "random":
                continue   # the extra seeds are random search's alone: its hit rate, more precisely
            entry = out["searchers"][name]
            for budget in (plan.budgets if name.startswith("kt_") else [top]):
                progress.task(f"{wname}: {name} seed {seed} budget {budget}")
                if entry["status"].startswith("not run") or time.monotonic() > stop_at:
                    if not entry["status"].startswith("not run"):
                        entry["status"] = "partly skipped: this workload's share of the time limit was spent"
                    progress.finished()
                    continue
                try:
                    if name == "swarm_cold":
                        teacher = InMemoryKnowledge()
                        if teachers is not None:
                            teachers[seed] = teacher
                        trace = searchers.swarm_trace(table, shape, budget, seed, teacher, cold=True)
                    else:
                        trace = searchers.run_searcher(name, table, shape, budget, seed, teacher=teacher)
                except searchers.NotRunnable as exc:
                    entry["status"] = str(exc)
                    progress.finished()
                    continue
                except TimeUp:
                    entry["status"] = "partly skipped: this workload's share of the time limit was spent"
                    progress.finished()
                    continue
                raw.setdefault(name, {}).setdefault(budget, {})[seed] = trace
                progress.finished()
    table.deadline = None
    swept = sweep(wname, table, shape, plan.sweep_up_to, progress, stop_at) if plan.sweep_up_to else None
    if plan.confirm_top:
        progress.task(f"{wname}: confirming the top {plan.confirm_top} points")
        out["confirmation_evaluations"] = table.confirm(shape, top=plan.confirm_top, extra=plan.confirm_extra)
        progress.finished()
    out["confirmed"] = {"top": plan.confirm_top, "measurements_each": 1 + plan.confirm_extra}
    for name, by_budget in raw.items():
        entry = out["searchers"][name]
        for budget, by_seed in by_budget.items():
            for seed, trace in by_seed.items():
                reported = getattr(trace, "best", None)
                # Every searcher is credited with the point's confirmed score.
                trace = [(p, table.score(shape, p, default=sc)) for p, sc in trace]
                curve = best_so_far([sc for _, sc in trace])
                if budget == top:
                    entry["runs"][str(seed)] = {"trace": [[p, sc] for p, sc in trace], "curve": curve}
                    if reported is not None:
                        entry["runs"][str(seed)]["reported_best"] = reported
                if name.startswith("kt_"):
                    entry["best_by_budget"].setdefault(str(budget), {})[str(seed)] = _at(curve, budget)
                else:
                    for b in plan.budgets:
                        entry["best_by_budget"].setdefault(str(b), {})[str(seed)] = _at(curve, b)
    best_row = table.best(shape)
    best_known = best_row["result"]["score"] if best_row else 0.0
    out["best_known"] = {"score": best_known, "params": best_row["params"] if best_row else None}
    out["target_95pct"] = 0.95 * best_known
    out["distinct_points_measured"] = sum(1 for r in table.rows.values() if r["shape"] == shape)
    if swept is not None:
        points = swept.pop("points", [])
        if swept["status"] == "complete":
            # Uniform draws without repeats, H hits among V legal points: the first hit comes
            # at draw (V + 1) / (H + 1) on average.
            hits = sum(1 for p in points if table.score(shape, p) >= out["target_95pct"])
            swept.update(hits=hits, expected_random_evals=(len(points) + 1) / (hits + 1))
        out["sweep"] = swept
    for name, entry in out["searchers"].items():
        entry["at_budget"] = {b: _stats([entry["best_by_budget"].get(b, {}).get(str(s)) for s in range(plan.seeds)])
                              for b in map(str, plan.budgets)}
        e95 = {seed: evals_to(r["curve"], out["target_95pct"]) for seed, r in entry["runs"].items()}
        entry["evals_to_95pct"] = e95
        vals = [v if v is not None else float("inf") for v in e95.values()]
        entry["median_evals_to_95pct"] = statistics.median(vals) if vals else None
        if entry["median_evals_to_95pct"] == float("inf"):
            entry["median_evals_to_95pct"] = None   # not reached within the budget (JSON has no inf)
    # Random search's evaluations to the target, estimated from all its draws (each run is a
    # sequence of uniform draws; three censored first-hit times say less than 150 draws do).
    rnd = out["searchers"].get("random")
    if rnd and rnd["runs"]:
        draws = [sc for r in rnd["runs"].values() for _, sc in r["trace"]]
        hits = sum(1 for sc in draws if sc >= out["target_95pct"])
        rnd["uniform_draws"] = {"draws": len(draws), "hits": hits,
                                "expected_evals": len(draws) / hits if hits else None,
                                # No hit in n draws: p < 3/n at 95% confidence ("rule of three").
                                "expected_evals_lower_bound": None if hits else len(draws) / 3}
    # Self-improvement: the warm run of seed s learned from the cold run of seed s; how many
    # evaluations each needed to reach that cold run's final best: the kernel the cold run
    # reported (its confirmed best), scored like every point, by the table's final figure. Not
    # the highest final figure in its trace: the table's own confirmation, after every run,
    # can lift a point the cold run measured once and never knew to be its best.
    cold, warm = out["searchers"].get("swarm_cold"), out["searchers"].get("swarm_warm")
    if cold and warm and cold["runs"] and warm["runs"]:
        rows = []
        for seed, w in warm["runs"].items():
            c = cold["runs"].get(seed)
            if not (c and c["curve"]):
                continue
            reported = c.get("reported_best")
            goal = table.score(shape, reported) if reported else c["curve"][-1]
            rows.append({"seed": int(seed), "teacher_seed": int(seed), "teacher_best": goal,
                         "teacher_best_params": reported, "teacher_trace_max": c["curve"][-1],
                         "warm_evals": evals_to(w["curve"], goal), "cold_evals": evals_to(c["curve"], goal)})
        out["self_improvement"] = rows
    return out


def swarm_best(search: dict) -> tuple[dict, float] | None:
    cold = search["searchers"].get("swarm_cold") or {}
    pts = [(p, s) for r in cold.get("runs", {}).values() for p, s in r["trace"]]
    if not pts:
        return None
    p, s = max(pts, key=lambda t: t[1])
    return (p, s) if s > 0 else None


def library_champion(workload: str, target: str = "cpu"):
    """The hook for the kernel library: ``kernels.library.champion(workload, target)`` →
    ``(source, params)`` or None. Until the library exists, the swarm's best is used."""
    try:
        from kernels import library  # noqa: F401  (a later issue)
    except ImportError:
        return None
    fn = getattr(library, "champion", None)
    return fn(workload, target) if fn else None


def run(plan: Plan, stream=sys.stderr) -> dict:
    clock = Clock(plan.deadline_minutes)
    progress = Progress(stream, _tasks(plan), clock)
    started = datetime.datetime.now(datetime.timezone.utc)
    result = {"benchmark": "peers", "schema": 1, "command": plan.command,
              "date": started.isoformat(timespec="seconds"), "host": host_info(),
              "plan": asdict(plan), "searchers": searchers.SEARCHERS, "kernels": {}, "search": {},
              "skipped": []}
    progress.task("roofline: STREAM copy/triad and FMA peak")
    t0 = time.monotonic()
    ceilings = kernels_vs.measure_roofline(result["host"]["fingerprint"])
    ceilings["seconds"] = round(time.monotonic() - t0, 2)
    result["roofline"] = ceilings
    progress.finished()
    tables = {}
    searched = plan.searched()
    # Workloads that are not searched go first (one fixed-budget run and their kernel
    # comparison each), so the searches share whatever time is left.
    names = [] if plan.gpu_only else ([w for w in plan.workloads if w not in searched] +
                                      [w for w in plan.workloads if w in searched])
    per_session = (40 if plan.compile_baseline else 15) * (1 if plan.quick else 1.5)
    for i, wname in enumerate(names):
        search_shape, kernel_shapes = plan.shapes[wname]
        table = Table(wname, plan.search_min_calls, log=progress.measured_one, settings=plan.search_eval)
        tables[wname] = table
        wl = workloads.get(wname)
        tpl = wl.template("cpu")
        if wname in searched:
            # The searches share the time left after what the remaining kernel comparisons
            # and fixed-budget runs will need (estimates); each stops at its share.
            rest = names[i:]
            kernel_reserve = sum(plan.sessions * len(plan.shapes[w][1]) for w in rest) * per_session
            fixed_reserve = 30 * sum(1 for w in rest if w not in searched)
            if plan.shape_runs:   # ~4 s per evaluation at a kernel shape, 7 of them confirmations
                fixed_reserve += 4 * (min(plan.budgets) + 7) * sum(
                    1 for w in rest for sh in plan.shapes[w][1] if sh != plan.shapes[w][0])
            searches_left = sum(1 for w in rest if w in searched)
            share = (clock.deadline - time.monotonic() - kernel_reserve - fixed_reserve) / searches_left
            stop_at = time.monotonic() + max(share, 30.0)
            teachers: dict = {}
            result["search"][wname] = search_section(wname, table, search_shape, plan, progress, clock, stop_at,
                                                     teachers=teachers)
            lessons = teachers.get(0)
            best = swarm_best(result["search"][wname])
            origin = (f"the swarm's best (cold runs, budget {max(plan.budgets)}, {plan.seeds} seeds) "
                      f"at {search_shape}")
        else:
            # Not searched in this run: one fixed-budget cold swarm run finds the kernel.
            budget = min(plan.budgets)
            progress.task(f"{wname}: swarm cold, budget {budget} (fixed-budget run)")
            lessons = InMemoryKnowledge()
            try:
                trace = searchers.swarm_trace(table, search_shape, budget, 0, lessons, cold=True)
            except TimeUp:
                trace = []
            progress.finished()
            result.setdefault("fixed_runs", {})[wname] = {"shape": search_shape, "budget": budget,
                                                         "trace": [[p, sc] for p, sc in trace]}
            best = max(trace, key=lambda t: t[1]) if trace and max(sc for _, sc in trace) > 0 else None
            origin = f"the swarm's best (one cold run, budget {budget}) at {search_shape}"
        champion = library_champion(wname)
        if champion:
            source, params = champion
            origin = "library champion"
        else:
            source, params = (tpl.source(tpl.variant_of(best[0])), best[0]) if best else (None, None)
        entries = {}
        for shape in kernel_shapes:
            if source is None:
                entries[shape] = {"status": "no correct kernel found by the swarm", "shape": shape}
                for _ in range(plan.sessions):
                    progress.finished()
                continue
            if clock.out():
                entries[shape] = {"status": "skipped: the run's time limit was reached", "shape": shape}
                result["skipped"].append(f"kernels {wname} {shape}")
                for _ in range(plan.sessions):
                    progress.finished()
                continue
            here_source, here_params, here_origin, found = source, params, origin, None
            if plan.shape_runs and shape != search_shape and not champion:
                found = shape_run(wname, table, shape, params, lessons or InMemoryKnowledge(),
                                  min(plan.budgets), progress)
                if found["status"] == "ok":
                    here_params = found["best"]["params"]
                    here_source = tpl.source(tpl.variant_of(here_params))
                    here_origin = (f"the best at {shape} of a swarm run there (budget {min(plan.budgets)}, with the "
                                   f"search's lessons) and {origin}, confirmed by the median of 3 measurements")
            progress.task(f"{wname}: kernel vs baselines at {shape}")
            entries[shape] = kernels_vs.compare(
                wname, shape, here_source, here_params, sessions=plan.sessions, min_calls=plan.min_calls,
                ceilings=ceilings, compile_baseline=plan.compile_baseline, timing_budget_s=plan.timing_budget_s,
                on_session=lambda i, out: progress.finished())
            entries[shape]["origin"] = here_origin
            if found is not None:
                entries[shape]["shape_run"] = found
        result["kernels"][wname] = entries
    result["kernels"] = {w: result["kernels"][w] for w in plan.workloads if w in result["kernels"]}
    if not plan.gpu_only:
        # Once more at the end (the higher figure of the two is kept), and every share of
        # the roofline recomputed against the final ceilings.
        progress.task("roofline: measured again")
        ceilings.update(kernels_vs.measure_roofline(result["host"]["fingerprint"], earlier=ceilings))
        kernels_vs.recompute_roofline(result["kernels"], ceilings)
        progress.finished()
    if plan.gpu:
        progress.task("GPU section")
        result["gpu"] = gpu.section(quick=plan.quick, workload_names=plan.workloads, clock=clock)
        progress.finished()
    else:
        result["gpu"] = {"ran": False, "why": "not asked for (--no-gpu)"}
    progress.close()
    result["targets"] = targets.assess(result)
    result["seconds"] = round(clock.seconds(), 1)
    result["table"] = {w: list(t.rows.values()) for w, t in tables.items()}
    return result
