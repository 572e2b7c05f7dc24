"""The evaluator: static checks → compile → audit → correctness → benchmark → sanity.

Cheapest stage first; the first failing stage decides the outcome. Whatever the candidate
does, ``evaluate`` returns an :class:`EvalOutcome`; only infrastructure faults (no
compiler, a full disk) raise. The candidate only ever runs in the target's own sandbox
processes (``phases``); this module never loads it, and trusts nothing they report that it
cannot check itself.
"""
from __future__ import annotations

import re
import secrets
import time

import numpy as np

from kernels import targets, workloads
from kernels.harness import calm
from kernels.harness import cases as C
from kernels.harness import phases, sanity
from kernels.harness.box import Box
from kernels.harness.build import BuildError
from kernels.harness.outcome import EvalOutcome, Stage
from kernels.harness.settings import EvalSettings, SettingsError, from_goal  # noqa: F401 (re-exported)
from kernels.harness.static import check_source
from kernels.harness.timing import speedups, summarize
from kernels.limits import shape_problem
from kernels.spec import SpecError, Workload
from kernels.targets.base import CompileFailure

DEFAULT_TARGET = targets.names()[0]


class _Stages(list):
    """The stage list; tells an observer (a progress bar, a live page) as each one lands."""

    def __init__(self, on_stage):
        super().__init__()
        self.on_stage = on_stage

    def append(self, stage: Stage) -> None:
        super().append(stage)
        if self.on_stage:
            self.on_stage(stage)


def declared_threads(source: str, params: dict) -> int | None:
    """The threads a candidate says it uses: a ``// int21: threads=N`` line in its source (a
    rewrite may declare its own), else its THREADS param."""
    m = re.search(r"^\s*//\s*int21:\s*threads\s*=\s*(\d+)\s*$", source or "", re.M)
    if m:
        return int(m.group(1))
    threads = params.get("THREADS")
    return threads if isinstance(threads, int) and not isinstance(threads, bool) else None


class Evaluator:
    """``Evaluator(settings, on_stage=callback).evaluate(source, params, workload, target)``."""

    def __init__(self, settings: EvalSettings | None = None, on_stage=None):
        self.settings = settings or EvalSettings()
        self.on_stage = on_stage

    # ------------------------------------------------------------------ public

    def evaluate(self, source: str, params: dict, workload: Workload | str, target: str = DEFAULT_TARGET) -> EvalOutcome:
        wl = workloads.get(workload) if isinstance(workload, str) else workload
        tgt = targets.get(target)
        ok, why = tgt.available()
        if not ok:
            raise RuntimeError(f"target {target} is not available here: {why}")
        stages: list[Stage] = _Stages(self.on_stage)
        fingerprint = tgt.fingerprint()
        s = self.settings
        notes = list(s.loosened)

        def finish(status, reason, **kw) -> EvalOutcome:
            kw["notes"] = notes + kw.get("notes", [])
            return EvalOutcome(status=status, reason=reason, stages=list(stages), fingerprint=fingerprint, **kw)

        # static
        t0 = time.monotonic()
        findings = check_source(source, tgt.language, max_bytes=wl.max_source_bytes)
        bad_params = _param_problems(params)
        stages.append(Stage("static", "failed" if findings or bad_params else "passed",
                            time.monotonic() - t0,
                            "; ".join([f.sentence() for f in findings] + bad_params) or "no forbidden constructs",
                            {"findings": [f.__dict__ for f in findings], "param_problems": bad_params}))
        if findings or bad_params:
            first = findings[0].sentence() if findings else bad_params[0]
            return finish("rejected_static", f"Refused before compiling: {first}.")

        # compile
        options = {"compile_timeout": s.compile_timeout, "fast_math": s.fast_math, "entry": "kernel",
                   "params": params, "arch": s.arch, **s.resource_limits}
        art = tgt.compile(source, params, options)
        if isinstance(art, CompileFailure):
            stages.append(Stage("compile", "failed", art.seconds, art.reason, {"log": art.log[-8000:]}))
            if art.refused:
                return finish("rejected_static", f"Refused while compiling: {art.reason}.")
            return finish("compile_error", f"Did not compile: {art.reason}.")
        stages.append(Stage("compile", "passed", art.compile_seconds,
                            "compiled (cached)" if art.cached else "compiled",
                            {"log": art.log[-8000:], "cached": art.cached, "resources": art.resources}))

        # audit
        t0 = time.monotonic()
        audit = tgt.audit(art, options)
        resources = {**art.resources, **audit.details.get("resources", {})}
        runnable = None
        if audit.ok:
            runnable, link_problem = _prepare(tgt, art, wl, options)
            if link_problem:
                audit.ok, audit.problems = False, [link_problem]
        stages.append(Stage("audit", "passed" if audit.ok else "failed", time.monotonic() - t0,
                            "; ".join(audit.problems) or "binary uses only allowed symbols and resources",
                            audit.details))
        if not audit.ok:
            return finish("audit_failed", f"The compiled kernel {audit.problems[0]}.", resources=resources)

        can, why_not = tgt.can_run()
        if not can:
            stages.append(Stage("correctness", "skipped", 0.0, why_not))
            return finish("compiled_only", f"Compiled and audited, not run: {why_not}.", resources=resources)

        box = Box()
        try:
            ctx = phases.Ctx(wl, tgt, runnable, params, s, s.tolerance or wl.tolerance, box,
                             np.random.default_rng(secrets.randbits(128)), declared_threads(source, params))
            return self._dynamic(ctx, stages, finish, resources)
        except BuildError as exc:   # the data, not the kernel: this process and its worker live on
            stages.append(Stage("inputs", "failed", 0.0, str(exc), {"build": exc.kind}))
            return finish("crashed", f"The harness could not build the data to check this kernel on: {exc}. "
                                     "The goal's shapes are too large for this host, not the kernel at fault.",
                          resources=resources)
        finally:
            box.close()

    # ------------------------------------------------------------------ dynamic stages

    def _dynamic(self, ctx: phases.Ctx, stages, finish, resources) -> EvalOutcome:
        wl, s, tol = ctx.wl, ctx.settings, ctx.tol
        shape = s.timing_shape or wl.shapes.typical[0]
        for asked in (shape, *s.extra_shapes, *(s.shapes or ())):
            problem = shape_problem(wl, asked)
            if problem:     # the caller's request, not the candidate's fault: nothing is allocated
                raise SpecError(problem)

        # correctness
        t0 = time.monotonic()
        small = self._cases(wl)
        C.materialise_all(wl, small)
        large = self._large_cases(wl, shape, ctx.rng)
        run = phases.correctness(ctx, small, large)
        n = len(small) + len(large)
        ill = [f"{c.label()} ({r['ill_conditioned']['note']})" for c in small + large
               for r in c.reports.values() if r.get("ill_conditioned")]
        stages.append(Stage("correctness", "passed" if run.verdict is None else "failed", time.monotonic() - t0,
                            run.verdict[1] if run.verdict else f"{n} cases passed ({tol.describe()})"
                            + (f"; {len(ill)} ill-conditioned: {'; '.join(ill)}" if ill else ""),
                            {"cases": run.rows, **run.details}))
        if run.verdict:
            return finish(run.verdict[0], run.verdict[1], resources=resources)
        if not s.timing:
            return finish("ok", f"Correct on {n} cases; not timed.", resources=resources)

        # benchmark
        t0 = time.monotonic()
        baselines = [b for b in wl.baselines.get(ctx.tgt.name, ())
                     if (b.name in s.baselines if s.baselines is not None else b.default)]
        bench = self._calm_benchmark(ctx, shape, baselines)
        stages.append(Stage("benchmark", "passed" if bench["verdict"] is None else "failed",
                            time.monotonic() - t0, bench["summary"], bench["details"]))
        if bench["verdict"]:
            return finish(*bench["verdict"], resources=resources, timings=bench["timings"])

        # sanity
        t0 = time.monotonic()
        ceilings = sanity.ceilings(ctx.tgt)
        flags = sanity.flags(wl, ctx.tgt, shape, bench, ceilings, ctx.threads_declared)
        if any(f.kind == "ceiling" for f in flags):
            # Ceilings measured on a busy host come out low: measure again before blaming
            # the kernel (the cache keeps the best measurement seen).
            ceilings = sanity.ceilings(ctx.tgt, refresh=True)
            flags = sanity.flags(wl, ctx.tgt, shape, bench, ceilings, ctx.threads_declared)
        notes = []
        if flags and s.recheck:
            notes.append("re-checked in a fresh process: " + "; ".join(f.text for f in flags))
            bench2 = self._calm_benchmark(ctx, shape, baselines)
            if bench2["verdict"]:
                stages.append(Stage("sanity", "failed", time.monotonic() - t0, bench2["summary"],
                                    {"flags": [f.text for f in flags]}))
                return finish(*bench2["verdict"], resources=resources, timings=bench2["timings"])
            flags2 = sanity.flags(wl, ctx.tgt, shape, bench2, ceilings, ctx.threads_declared)
            lasting = [f for f in flags2 if f.kind in ("ceiling", "threads")]
            if lasting:
                stages.append(Stage("sanity", "failed", time.monotonic() - t0, "; ".join(f.text for f in lasting),
                                    {"flags": [f.text for f in flags2], "ceilings": ceilings}))
                return finish("suspicious", sanity.verdict(lasting), resources=resources, timings=bench2["timings"],
                              speedup=speedups(bench2["timings"]), notes=notes)
            bench, flags = bench2, flags2
        stages.append(Stage("sanity", "passed", time.monotonic() - t0,
                            "; ".join(f.text for f in flags) if flags else "within this host's measured ceilings",
                            {"flags": [f.text for f in flags], "ceilings": ceilings,
                             **sanity.roofline(wl, shape, bench, ceilings)}))
        resources.update(bench["details"].get("cpu") or {})
        speed = speedups(bench["timings"])
        best = max(speed.items(), key=lambda kv: kv[1]) if speed else None
        reason = (f"Correct on {n} cases; {bench['timings']['candidate']['median_ms']:.3f} ms median at "
                  f"{shape}" + (f", {best[1]:.2f}x {best[0]}" if best else "") + ".")
        return finish("ok", reason, timings=bench["timings"], speedup=speed, resources=resources,
                      notes=notes + bench["notes"])

    def _calm_benchmark(self, ctx: phases.Ctx, shape, baselines) -> dict:
        """A timing session, and up to ``retime`` more in fresh processes while the trusted
        baselines say the host was in a slow phase (see :mod:`kernels.harness.calm`), unless a
        session timed again was nearly as slow as the first (a phase that outlasts a session
        outlasts the next one too, on this host). The calmest session is kept; a failing
        verdict in any session is the verdict."""
        norms = calm.BaselineNorms(ctx.tgt.fingerprint(), ctx.wl.name, ctx.tgt.name, shape.label(),
                                   self.settings.cold_cache)
        sessions = []
        while True:
            before = calm.cpu_ticks()
            bench = _session(ctx, shape, baselines)
            if bench["verdict"]:
                return bench
            judged = norms.judge(bench["timings"])
            judged.steal = calm.steal_between(before, calm.cpu_ticks())
            judged.others = bench.get("others")
            norms.record(bench["timings"])
            sessions.append((judged, bench))
            if not judged.disturbed or len(sessions) > self.settings.retime:
                break
            if len(sessions) >= 2 and judged.slowness >= calm.PERSISTS * sessions[0][0].slowness:
                break   # the phase outlasts a session: another one would cost as much and find it too
        index = min(range(len(sessions)), key=lambda i: sessions[i][0].slowness)
        kept, bench = sessions[index]
        bench["details"]["host_calm"] = {"sessions": [j.to_json() for j, _ in sessions],
                                         "kept": index, "slow_above": calm.SLOW}
        if len(sessions) > 1:
            first = sessions[0][0]
            persisted = (len(sessions) <= self.settings.retime and sessions[-1][0].disturbed)
            bench["notes"] = bench["notes"] + [
                f"timed {len(sessions)} times: the host was in a slow phase ({first.sentence()}); "
                f"kept the calmest session ({kept.sentence()})"
                + ("; the phase persisted, so it was not timed again" if persisted else "")]
            bench["summary"] += f"; calmest of {len(sessions)} sessions"
        return bench

    # ------------------------------------------------------------------ cases

    def _cases(self, wl: Workload) -> list[C.Case]:
        s = self.settings
        shapes = ([("custom", sh) for sh in s.shapes] if s.shapes else wl.shapes.correctness())
        shapes += [("held_out", sh) for sh in s.extra_shapes]
        return C.small_cases(wl, seeds=s.seeds, shapes=shapes)

    def _large_cases(self, wl: Workload, timed, rng) -> list[C.Case]:
        """The timed shape on every distribution; every other typical shape on one (secret)."""
        out = []
        for dist in wl.distributions:
            out.append(self._large(wl, timed, dist, rng, len(out), "timed"))
        if self.settings.typical_checks:
            for shape in wl.shapes.typical:
                if shape != timed:
                    dist = wl.distributions[int(rng.integers(len(wl.distributions)))]
                    out.append(self._large(wl, shape, dist, rng, len(out), "typical"))
        return out

    @staticmethod
    def _large(wl, shape, dist, rng, i, kind) -> C.Case:
        base = C.base_set(wl, shape, dist)
        view = C.View.identity(base).shuffled(rng) if C.can_reorder(wl, shape) else C.View.identity(base)
        return C.Case(f"L{i}", kind, shape, dist, -1, scalars=base.scalars, view=view)


def _session(ctx: phases.Ctx, shape, baselines) -> dict:
    """One timing session as the benchmark stage reports it."""
    run = phases.timing(ctx, shape, baselines)
    result = {"verdict": run.verdict, "timings": {}, "notes": list(run.notes), "details": dict(run.details)}
    if run.verdict:
        result["summary"] = run.verdict[1]
        return result
    timings = {name: summarize(v) for name, v in run.samples.items()}
    result["timings"] = timings
    details = result["details"]
    result["others"] = details.pop("others", None)
    samples = details.pop("copy_probe_samples", None)
    nbytes = details.pop("copy_probe_bytes", None)
    if samples:
        t = summarize(samples)
        result["details"]["copy_probe"] = {"median_ms": t["median_ms"], "iqr_ms": t["iqr_ms"], "n": t["n"],
                                           "bytes": nbytes, "gbs": nbytes / (t["median_ms"] / 1e3) / 1e9}
    result["details"].update(timings=timings, shape=shape.as_dict(), cold_cache=ctx.settings.cold_cache)
    cand = timings["candidate"]
    result["summary"] = (f"{cand['median_ms']:.3f} ms median (IQR {cand['iqr_ms']:.3f}, min {cand['min_ms']:.3f}) "
                         f"over {cand['n']} calls, interleaved with "
                         f"{', '.join(n for n in timings if n != 'candidate') or 'no baselines'}")
    return result


def _prepare(tgt, art, wl, options) -> tuple[object, str | None]:
    """The target's runnable form of an audited artifact (a CPU kernel linked into the runner)."""
    from kernels.harness.runner import LinkError
    try:
        return tgt.prepare(art, wl, options), None
    except LinkError as exc:   # a link the toolchain refused: the candidate's object is at fault
        first = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else "the linker failed"
        return None, f"could not be linked into the runner ({first})"


def _param_problems(params: dict) -> list[str]:
    problems = []
    for name, value in params.items():
        if not (isinstance(name, str) and name.isidentifier() and name.isupper()):
            problems.append(f"param name {name!r} must be an UPPER_CASE identifier")
        elif not (isinstance(value, (int, str)) and not isinstance(value, float)):
            problems.append(f"param {name} must be an integer or a variant name")
        elif isinstance(value, str) and not value.replace("_", "").isalnum():
            problems.append(f"param {name}: variant name {value!r} must be alphanumeric")
    return problems
