"""The evaluator: static checks → compile → audit → correctness → benchmark → sanity.

Cheapest stage first; the first failing stage decides the outcome. Whatever the candidate
does, ``evaluate`` returns an :class:`EvalOutcome`; only infrastructure faults (no
compiler, a full disk) raise.
"""
from __future__ import annotations

import atexit
import hmac
import signal
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from kernels import targets, workloads
from kernels.harness import calm, fill, sandbox
from kernels.harness.outcome import EvalOutcome, Stage
from kernels.harness.static import check_source
from kernels.harness.timing import speedups, summarize
from kernels.harness.verify import Prepared, compare, input_digest
from kernels.spec import Shape, Tolerance, Workload
from kernels.targets.base import CompileFailure

SUSPICIOUS_SPEEDUP = 10.0   # over a strong baseline: re-checked in a fresh process
PHYSICS_MARGIN_BW = 2.0     # × the measured STREAM ceiling (non-temporal stores beat plain copy)
PHYSICS_MARGIN_FLOPS = 1.1  # × the measured FMA peak


@dataclass
class EvalSettings:
    """How hard to check and how long to wait. Defaults follow HARNESS.md; goals tighten."""

    compile_timeout: float = 120.0
    run_timeout: float = 180.0
    seeds: int = 5
    shapes: tuple[Shape, ...] | None = None        # correctness shapes (default: awkward + minimal)
    extra_shapes: tuple[Shape, ...] = ()           # held-out shapes, added to correctness
    timing_shape: Shape | None = None              # default: the workload's first typical shape
    timing: bool = True
    baselines: tuple[str, ...] | None = None       # None: the workload's default baselines
    min_calls: int = 20
    max_calls: int = 200
    timing_budget_s: float = 1.0                  # stop after min_calls once past this…
    target_rel_err: float = 0.02                   # …or once every median is this precise
    cold_cache: bool = False
    fast_math: bool = False
    memory_mb: int = 4096
    tolerance: Tolerance | None = None
    launcher: str = "zygote"                       # "zygote" | "spawn"
    recheck: bool = True
    retime: int = 2                                # more timing sessions while the host is in a slow phase
    isolate: bool = True
    arch: str = "sm_90"                            # CUDA: the architecture to compile for
    resource_limits: dict = field(default_factory=dict)  # CUDA: max_registers, max_shared_bytes, …


@dataclass
class _Case:
    id: str
    kind: str
    shape: Shape
    distribution: str
    seed: int
    inputs: dict = field(default_factory=dict)
    scalars: dict = field(default_factory=dict)
    reference: dict | None = None
    ref32: dict | None = None
    reports: dict = field(default_factory=dict)
    alt: "_Case | None" = None   # timing: a second data set rotated into the same buffers

    def label(self) -> str:
        return f"{self.kind} {self.shape} {self.distribution} seed {self.seed}"


class _Stages(list):
    """The stage list; tells an observer (a progress bar, a live page) as each one lands."""

    def __init__(self, on_stage):
        super().__init__()
        self.on_stage = on_stage

    def append(self, stage: Stage) -> None:
        super().append(stage)
        if self.on_stage:
            self.on_stage(stage)


class Evaluator:
    """``Evaluator(settings, on_stage=callback).evaluate(source, params, workload, target)``."""

    def __init__(self, settings: EvalSettings | None = None, on_stage=None):
        self.settings = settings or EvalSettings()
        self.on_stage = on_stage
        self._target, self._params = "cpu", {}   # of the candidate being evaluated

    # ------------------------------------------------------------------ public

    def evaluate(self, source: str, params: dict, workload: Workload | str, target: str = "cpu") -> EvalOutcome:
        wl = workloads.get(workload) if isinstance(workload, str) else workload
        tgt = targets.get(target)
        ok, why = tgt.available()
        if not ok:
            raise RuntimeError(f"target {target} is not available here: {why}")
        stages: list[Stage] = _Stages(self.on_stage)
        fingerprint = tgt.fingerprint()

        def finish(status, reason, **kw) -> EvalOutcome:
            return EvalOutcome(status=status, reason=reason, stages=list(stages), fingerprint=fingerprint, **kw)

        # static
        t0 = time.monotonic()
        findings = check_source(source, tgt.language)
        bad_params = _param_problems(params)
        stages.append(Stage("static", "failed" if findings or bad_params else "passed",
                            time.monotonic() - t0,
                            "; ".join([f.sentence() for f in findings] + bad_params) or "no forbidden constructs",
                            {"findings": [f.__dict__ for f in findings], "param_problems": bad_params}))
        if findings or bad_params:
            first = findings[0].sentence() if findings else bad_params[0]
            return finish("rejected_static", f"Refused before compiling: {first}.")

        # compile
        options = {"compile_timeout": self.settings.compile_timeout, "fast_math": self.settings.fast_math,
                   "entry": "kernel", "params": params, "arch": self.settings.arch,
                   **self.settings.resource_limits}
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
        stages.append(Stage("audit", "passed" if audit.ok else "failed", time.monotonic() - t0,
                            "; ".join(audit.problems) or "binary uses only allowed symbols and resources",
                            audit.details))
        resources = {**art.resources, **audit.details.get("resources", {})}
        if not audit.ok:
            return finish("audit_failed", f"The compiled kernel {audit.problems[0]}.", resources=resources)

        runnable, why_not = tgt.can_run()
        if not runnable:
            stages.append(Stage("correctness", "skipped", 0.0, why_not))
            return finish("compiled_only", f"Compiled and audited, not run: {why_not}.", resources=resources)

        workdir = _workdir()
        try:
            return self._run_stages(wl, tgt, art, params, workdir, stages, finish, resources)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    # ------------------------------------------------------------------ dynamic stages

    def _run_stages(self, wl, tgt, art, params, workdir, stages, finish, resources):
        s = self.settings
        tol = s.tolerance or wl.tolerance
        self._target, self._params = tgt.name, params
        shutil.copyfile(art.path, workdir / _ARTIFACT[tgt.name])

        # correctness
        t0 = time.monotonic()
        cases = self._cases(wl)
        for case in cases:
            self._materialise(wl, case, workdir)
        run = self._launch(wl, workdir, "correct", cases=cases, timing_case=None)
        verdict = (("suspicious", run.tampered) if run.tampered else
                   _judge_correctness(wl, cases, run, tol, workdir))
        stages.append(Stage("correctness", "passed" if verdict is None else "failed", time.monotonic() - t0,
                            verdict[1] if verdict else f"{len(cases)} cases passed ({tol.describe()})",
                            {"cases": _case_reports(cases, run, tol), "isolation": _isolation(run),
                             **_exit_details(run)}))
        if verdict:
            return finish(verdict[0], verdict[1], resources=resources)
        if not s.timing:
            return finish("ok", f"Correct on {len(cases)} cases; not timed.", resources=resources)

        # benchmark
        t0 = time.monotonic()
        shape = s.timing_shape or wl.shapes.typical[0]
        tcase = _Case("timing", "typical", shape, wl.distributions[0], 9001)
        self._materialise(wl, tcase, workdir, cache=True)
        tcase.alt = _Case("timingb", "typical", shape, wl.distributions[0], 9002)
        self._materialise(wl, tcase.alt, workdir, cache=True, derive_from=tcase)
        bench = self._calm_benchmark(wl, tgt, workdir, tcase, tol)
        stages.append(Stage("benchmark", "passed" if bench["verdict"] is None else "failed",
                            time.monotonic() - t0, bench["summary"], bench["details"]))
        if bench["verdict"]:
            return finish(*bench["verdict"], resources=resources, timings=bench["timings"])

        # sanity
        t0 = time.monotonic()
        ceilings = _ceilings(tgt)
        flags = _sanity_flags(wl, tcase.shape, bench, ceilings, params)
        if any("ceiling" in f for f in flags):
            # Ceilings measured on a busy host come out low: measure again before blaming
            # the kernel (the cache keeps the best measurement seen).
            ceilings = _ceilings(tgt, refresh=True)
            flags = _sanity_flags(wl, tcase.shape, bench, ceilings, params)
        notes = []
        if flags and s.recheck:
            notes.append("re-checked in a fresh process: " + "; ".join(flags))
            bench2 = self._calm_benchmark(wl, tgt, workdir, tcase, tol)
            if bench2["verdict"]:
                stages.append(Stage("sanity", "failed", time.monotonic() - t0, bench2["summary"], {"flags": flags}))
                return finish(*bench2["verdict"], resources=resources, timings=bench2["timings"])
            flags2 = _sanity_flags(wl, tcase.shape, bench2, ceilings, params)
            physical = [f for f in flags2 if "ceiling" in f or "CPU" in f]
            if physical:
                stages.append(Stage("sanity", "failed", time.monotonic() - t0, "; ".join(physical),
                                    {"flags": flags2, "ceilings": ceilings}))
                return finish("suspicious", f"Physically implausible, twice: {physical[0]}.",
                              resources=resources, timings=bench2["timings"],
                              speedup=speedups(bench2["timings"]), notes=notes)
            bench, flags = bench2, flags2
        stages.append(Stage("sanity", "passed", time.monotonic() - t0,
                            "; ".join(flags) if flags else "within this host's measured ceilings",
                            {"flags": flags, "ceilings": ceilings, **_roofline(wl, tcase.shape, bench, ceilings)}))
        resources.update(bench["details"].get("cpu", {}))
        speed = speedups(bench["timings"])
        best = max(speed.items(), key=lambda kv: kv[1]) if speed else None
        reason = (f"Correct on {len(cases)} cases; {bench['timings']['candidate']['median_ms']:.3f} ms median at "
                  f"{tcase.shape}" + (f", {best[1]:.2f}x {best[0]}" if best else "") + ".")
        return finish("ok", reason, timings=bench["timings"], speedup=speed, resources=resources,
                      notes=notes + bench["notes"])

    def _calm_benchmark(self, wl, tgt, workdir, tcase, tol) -> dict:
        """A timing session, and up to ``retime`` more in fresh processes while the trusted
        baselines say the host was in a slow phase (see :mod:`kernels.harness.calm`), unless a
        session timed again was nearly as slow as the first (a phase that outlasts a session
        outlasts the next one too, on this host). The calmest session is kept; a failing
        verdict in any session is the verdict."""
        norms = calm.BaselineNorms(tgt.fingerprint(), wl.name, tgt.name, tcase.shape.label(),
                                   self.settings.cold_cache)
        sessions = []
        while True:
            before = calm.cpu_ticks()
            bench = self._benchmark(wl, workdir, tcase, tol)
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

    def _benchmark(self, wl, workdir, tcase, tol) -> dict:
        run = self._launch(wl, workdir, "bench", cases=[], timing_case=tcase)
        rec = next((r for r in run.records if r.get("kind") == "timing"), None)
        done = any(r.get("kind") == "done" for r in run.records)
        result = {"verdict": None, "timings": {}, "notes": [], "details": {**_exit_details(run)}}
        if run.tampered:
            result.update(verdict=("suspicious", run.tampered), summary=run.tampered)
            return result
        if run.timed_out or not done or rec is None:
            status, reason = _death(run, "while being timed")
            result.update(verdict=(status, reason), summary=reason)
            return result
        if rec.get("problems"):
            reason = f"While being timed at {tcase.shape}: {rec['problems'][0]}."
            result.update(verdict=("wrong", reason), summary=reason)
            return result
        reports = {}
        for case, paths in ((tcase, rec["outputs"]), (tcase.alt, rec.get("outputs_b") or {})):
            for n, p in paths.items():
                reports[f"{n} ({case.id})"] = compare(np.load(workdir / p), case.reference[n], tol,
                                                      (case.ref32 or {}).get(n))
        result["details"]["verification"] = reports
        bad = next((r for r in reports.values() if not r["passed"]), None)
        if bad or len(reports) < 2 * len(tcase.reference):
            why = bad["why"] if bad else "an output of a verified call is missing"
            reason = f"Wrong at the timed shape {tcase.shape}: {why}."
            result.update(verdict=("wrong", reason), summary=reason)
            return result
        if rec.get("mismatch_at_call"):
            reason = (f"Timed call #{rec['mismatch_at_call']} produced different output from the verified "
                      "call (a kernel must not change behaviour after N calls).")
            result.update(verdict=("wrong", reason), summary=reason)
            return result
        timings = {name: summarize(samples) for name, samples in rec["samples"].items()}
        result["timings"] = timings
        result["notes"] = rec.get("notes", [])
        result["others"] = rec.get("others") if isinstance(rec.get("others"), (int, float)) else None
        wall = rec.get("wall_seconds") or 0.0
        result["details"].update(
            timings=timings, timed_calls=rec.get("timed_calls"), blas=rec.get("blas"),
            cpu={"cpu_per_wall": (rec.get("cpu_seconds", 0.0) / wall) if wall else None},
            shape=tcase.shape.as_dict(), cold_cache=self.settings.cold_cache,
            poison_fill=rec.get("poison_fill", "cached"))
        probe = _copy_probe(rec.get("probes"))
        if probe:
            result["details"]["copy_probe"] = probe
        cand = timings["candidate"]
        result["summary"] = (f"{cand['median_ms']:.3f} ms median (IQR {cand['iqr_ms']:.3f}, min {cand['min_ms']:.3f}) "
                             f"over {cand['n']} calls, interleaved with "
                             f"{', '.join(n for n in timings if n != 'candidate') or 'no baselines'}")
        return result

    # ------------------------------------------------------------------ plumbing

    def _cases(self, wl: Workload) -> list[_Case]:
        s = self.settings
        shapes = ([("custom", sh) for sh in s.shapes] if s.shapes else wl.shapes.correctness())
        shapes += [("held_out", sh) for sh in s.extra_shapes]
        cases = []
        dists = wl.distributions
        for si, (kind, shape) in enumerate(shapes):
            seen = set()
            for seed in range(s.seeds):
                dist = dists[(seed + si) % len(dists)]
                seen.add(dist)
                cases.append(_Case(f"c{len(cases)}", kind, shape, dist, seed))
            # every distribution on every shape, even when there are more of them than seeds
            for extra in (d for d in dists if d not in seen):
                cases.append(_Case(f"c{len(cases)}", kind, shape, extra, 100 + len(cases)))
        return cases

    def _materialise(self, wl: Workload, case: _Case, workdir: Path, cache: bool = False,
                     derive_from: _Case | None = None) -> None:
        """Make the case's inputs (files for the child) and its float64 reference (kept here).

        ``cache``: the timing case is the same every evaluation (fixed seed, large shape),
        so its inputs and reference are computed once per process and the input files are
        hard-linked into each fresh working directory."""
        key = (wl.name, case.shape.label(), case.distribution, case.seed, derive_from is not None)
        hit = _TIMING_CASES.get(key) if cache else None
        if hit is None:
            data = wl.make_inputs(case.shape, case.distribution, case.seed)
            inputs = {n: np.ascontiguousarray(v, dtype=np.float32) for n, v in data.items()
                      if isinstance(v, np.ndarray)}
            if derive_from is not None:
                inputs = {n: _splice(derive_from.inputs[n], fresh, case.seed) for n, fresh in inputs.items()}
            scalars = {n: float(v) for n, v in data.items() if not isinstance(v, np.ndarray)}
            reference = wl.reference({**inputs, **scalars}, case.shape)
            files = {}
            if cache:
                store = Path(tempfile.mkdtemp(prefix="int21-case-", dir=_shm()))
                os.chmod(store, 0o755)
                for n, arr in inputs.items():
                    files[n] = store / f"{n}.npy"
                    np.save(files[n], arr, allow_pickle=False)
                    os.chmod(files[n], 0o444)
                tol = self.settings.tolerance or wl.tolerance
                ref32 = {n: Prepared(r, tol) for n, r in reference.items()}
                hit = (inputs, scalars, reference, ref32, files)
                _drop_timing_cases(keep=1)  # keep the newest pair (two data sets): these are large
                _TIMING_CASES[key] = hit
            else:
                hit = (inputs, scalars, reference, None, files)
        case.inputs, case.scalars, case.reference, case.ref32, files = hit
        for name, arr in case.inputs.items():
            dest = workdir / f"in_{case.id}_{name}.npy"
            if name in files:
                try:
                    os.link(files[name], dest)
                    continue
                except OSError:
                    pass
            np.save(dest, arr, allow_pickle=False)

    def _plan_case(self, wl: Workload, case: _Case) -> dict:
        extra = {}
        if case.alt is not None:
            extra["inputs_b"] = {n: f"in_{case.alt.id}_{n}.npy" for n in case.alt.inputs}
            extra["input_digests_b"] = {n: _digest_of(a) for n, a in case.alt.inputs.items()}
        if self._target == "cuda":
            grid, block, shared = wl.template("cuda").launch(case.shape, self._params)
            extra["launch"] = {"grid": list(grid), "block": list(block), "shared": int(shared)}
        return {**extra,
            "id": case.id,
            "dims": case.shape.as_dict(),
            "scalars": case.scalars,
            "inputs": {n: f"in_{case.id}_{n}.npy" for n in case.inputs},
            "input_digests": {n: _digest_of(a) for n, a in case.inputs.items()},
            "outputs": {n: list(shp) for n, shp in wl.out_shapes(case.shape).items()},
        }

    def _launch(self, wl, workdir, name, *, cases, timing_case) -> sandbox.ProcessResult:
        s = self.settings
        baselines = [b for b in wl.baselines.get(self._target, ())
                     if (b.name in s.baselines if s.baselines is not None else b.default)]
        gpu = self._target == "cuda"
        key = os.urandom(16)
        plan = {
            "key": key.hex(),
            "target": self._target,
            "artifact": _ARTIFACT[self._target],
            "entry": "kernel",
            "args": [{"name": a.name, "kind": a.kind} for a in wl.args],
            "limits": {"wall_seconds": s.run_timeout, "cpu_seconds": int(s.run_timeout * 4) + 10,
                       "memory_mb": s.memory_mb, "file_mb": 4096, "open_files": 256},
            "isolate": s.isolate,
            "cases": [self._plan_case(wl, c) for c in cases],
            "timing": None if timing_case is None else {
                "case": self._plan_case(wl, timing_case),
                "baselines": [{"name": b.name, "fn": b.fn, "requires": b.requires} for b in baselines],
                "min_calls": max(s.min_calls, 100) if gpu else s.min_calls,
                "max_calls": max(s.max_calls, 300) if gpu else s.max_calls,
                "budget_seconds": s.timing_budget_s,
                "target_rel_err": s.target_rel_err,
                "warmup": 2, "cold_cache": s.cold_cache,
                "fill_lib": None if gpu else fill.library(),
            },
        }
        plan_path = workdir / f"plan_{name}.json"
        plan_path.write_text(json.dumps(plan))
        _share(workdir)
        limits = sandbox.Limits(wall_seconds=s.run_timeout)
        run = None
        if s.launcher == "zygote":
            try:
                run = sandbox.Zygote.for_this_thread().run(plan_path, cwd=workdir, limits=limits)
            except sandbox.ZygoteError:
                run = None  # fall back to a fresh interpreter; slower, same guarantees
        if run is None:
            run = sandbox.run_process([sys.executable, "-s", "-B", "-m", "kernels.harness.child", str(plan_path)],
                                      cwd=workdir, limits=limits, protocol=True)
        run.tampered = _authenticate(run, key)
        return run


# --------------------------------------------------------------------------- judging

def _authenticate(run: sandbox.ProcessResult, key: bytes) -> str | None:
    """Every record must carry the next sequence number and a valid MAC under this
    session's key; anything else was written by someone other than the harness."""
    for expected, rec in enumerate(run.records, start=1):
        mac = rec.pop("mac", None) if isinstance(rec, dict) else None
        body = json.dumps(rec, sort_keys=True).encode()
        ok = (mac is not None and rec.get("seq") == expected
              and hmac.compare_digest(mac, hmac.new(key, body, "sha256").hexdigest()))
        if not ok:
            return (f"The sandbox child's protocol record #{expected} ({rec.get('kind', '?')}) failed "
                    "authentication: something other than the harness wrote it (the kernel tampered with "
                    "the evaluation).")
    return None


def _death(run: sandbox.ProcessResult, when: str) -> tuple[str, str]:
    last = next((r for r in reversed(run.records) if r.get("kind") in ("call", "phase")), None)
    where = ""
    if last and last.get("kind") == "call":
        where = f" (in case {last['case']}, call {last['attempt'] + 1})"
    elif last:
        where = f" (during {last['phase']})"
    if run.timed_out:
        return "timeout", f"The kernel ran past the {run.seconds:.0f} s limit {when}{where} and was killed."
    tail = run.stderr.strip().splitlines()[-1:] if run.stderr.strip() else []
    memory = "MemoryError" in run.stderr or "Cannot allocate memory" in run.stderr
    extra = f": {tail[0][:200]}" if tail else ""
    if run.signal == signal.SIGSYS:
        extra = " (it made a system call the sandbox forbids: opening files, starting processes, sockets…)"
    if memory:
        extra = " after exhausting its memory limit" + extra
    return "crashed", f"The sandbox child {run.describe_exit()} {when}{where}{extra}."


def _judge_correctness(wl, cases, run, tol, workdir: Path) -> tuple[str, str] | None:
    done = any(r.get("kind") == "done" for r in run.records)
    if run.timed_out or not done:
        return _death(run, "during correctness checks")
    by_id = {r["id"]: r for r in run.records if r.get("kind") == "case"}
    for case in cases:
        rec = by_id.get(case.id)
        if rec is None:
            return "crashed", f"The sandbox child skipped case {case.label()}."
        if rec["problems"]:
            return "wrong", f"On {case.label()}: {rec['problems'][0]}."
    for case in cases:
        rec = by_id[case.id]
        for name, ref in case.reference.items():
            report = compare(np.load(workdir / rec["outputs"][name]), ref, tol)
            case.reports[name] = report
            if not report["passed"]:
                return "wrong", f"Wrong on {case.label()}, output {name}: {report['why']}."
    for case in cases:
        for name, path in (by_id[case.id].get("second_outputs") or {}).items():
            report = compare(np.load(workdir / path), case.reference[name], tol)
            if not report["passed"]:
                return "wrong", (f"Wrong on {case.label()} when called again with other bytes in its output "
                                 f"buffer (output {name}: {report['why']}).")
    if wl.deterministic:
        for case in cases:
            if not by_id[case.id].get("deterministic", True):
                return "nondeterministic", (f"Two runs on the same inputs ({case.label()}) gave different bits; "
                                            "the kernel reads memory it never wrote, or races.")
    return None


def _case_reports(cases, run, tol) -> list:
    rows = []
    by_id = {r["id"]: r for r in run.records if r.get("kind") == "case"}
    for c in cases:
        rec = by_id.get(c.id, {})
        reports = c.reports
        row = {"id": c.id, "kind": c.kind, "shape": c.shape.label(), "distribution": c.distribution,
               "seed": c.seed, "problems": rec.get("problems"), "deterministic": rec.get("deterministic"),
               "outputs": {n: {k: v for k, v in r.items() if k != "shape"} for n, r in reports.items()}}
        row["passed"] = bool(rec) and not rec.get("problems") and all(r["passed"] for r in reports.values()) \
            and bool(reports)
        rows.append(row)
    return rows


def _exit_details(run) -> dict:
    return {"exit": run.describe_exit(), "seconds": round(run.seconds, 3),
            "stderr_tail": run.stderr[-2000:], "stdout_tail": run.stdout[-2000:],
            "output_truncated": run.stdout_truncated or run.stderr_truncated}


def _isolation(run) -> list:
    hello = next((r for r in run.records if r.get("kind") == "hello"), {})
    return hello.get("isolation", [])


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


# --------------------------------------------------------------------------- sanity

def _ceilings(tgt, refresh: bool = False) -> dict:
    try:
        from kernels.harness.roofline import cpu_ceilings
        return cpu_ceilings(tgt.fingerprint(), refresh=refresh) if tgt.name == "cpu" else {}
    except Exception as exc:  # a missing ceiling disables the physics check, visibly
        return {"error": f"could not measure this host's ceilings: {exc}"}


def _copy_probe(probes) -> dict | None:
    """The timing child's copy probe (child._copy_probe): its median and the GB/s it implies."""
    try:
        copy = probes["copy"]
        t = summarize([float(v) for v in copy["samples"]])
        gbs = float(copy["bytes"]) / (t["median_ms"] / 1e3) / 1e9
    except (TypeError, KeyError, ValueError, ZeroDivisionError):
        return None
    return {"median_ms": t["median_ms"], "iqr_ms": t["iqr_ms"], "n": t["n"], "bytes": int(copy["bytes"]),
            "gbs": gbs}


def _roofline(wl, shape, bench, ceilings) -> dict:
    med = bench["timings"]["candidate"]["median_ms"] / 1e3
    out = {"achieved_gbs": wl.bytes_moved(shape) / med / 1e9, "achieved_gflops": wl.flops(shape) / med / 1e9}
    probe = bench["details"].get("copy_probe")
    if probe and probe.get("gbs"):
        # the same session's streaming copy, timed interleaved with the candidate
        out["session_copy_gbs"] = probe["gbs"]
        out["pct_of_session_copy"] = 100 * out["achieved_gbs"] / probe["gbs"]
    if ceilings.get("copy_gbs"):
        out["pct_of_copy_bandwidth"] = 100 * out["achieved_gbs"] / ceilings["copy_gbs"]
    if ceilings.get("peak_gflops"):
        out["pct_of_peak_flops"] = 100 * out["achieved_gflops"] / ceilings["peak_gflops"]
    return out


def _sanity_flags(wl, shape, bench, ceilings, params) -> list[str]:
    flags = []
    t = bench["timings"]
    med = t["candidate"]["median_ms"] / 1e3
    llc = targets.get("cpu").fingerprint().get("llc_bytes") or 0
    bw = wl.bytes_moved(shape) / med / 1e9
    bw_ceiling = max(ceilings.get("copy_gbs", 0), ceilings.get("triad_gbs", 0))
    if bw_ceiling and wl.bytes_moved(shape) > 2 * llc and bw > PHYSICS_MARGIN_BW * bw_ceiling:
        flags.append(f"implies {bw:.0f} GB/s, above {PHYSICS_MARGIN_BW:g}x the measured bandwidth ceiling "
                     f"({bw_ceiling:.0f} GB/s)")
    gflops = wl.flops(shape) / med / 1e9
    peak = ceilings.get("peak_gflops", 0)
    if peak and gflops > PHYSICS_MARGIN_FLOPS * peak:
        flags.append(f"implies {gflops:.0f} GFLOP/s, above the measured compute ceiling ({peak:.0f} GFLOP/s)")
    ratio = bench["details"].get("cpu", {}).get("cpu_per_wall")
    threads = params.get("THREADS")
    if ratio and isinstance(threads, int) and ratio > threads * 1.25 + 0.35:
        flags.append(f"used {ratio:.2f} CPU-seconds per second with THREADS={threads} (hidden threads?)")
    strong = {b.name for bl in wl.baselines.values() for b in bl if b.strong}
    for name, ratio_ in speedups(t).items():
        if name in strong and ratio_ > SUSPICIOUS_SPEEDUP:
            flags.append(f"{ratio_:.1f}x faster than {name}, a strong baseline")
    return flags


# --------------------------------------------------------------------------- files

_TIMING_CASES: dict = {}


def _drop_timing_cases(keep: int = 0) -> None:
    while len(_TIMING_CASES) > keep:
        oldest = next(iter(_TIMING_CASES))
        for f in _TIMING_CASES.pop(oldest)[-1].values():
            shutil.rmtree(f.parent, ignore_errors=True)


atexit.register(_drop_timing_cases)
_ARTIFACT = {"cpu": "kernel.so", "cuda": "kernel.cubin"}


def _shm() -> str | None:
    return "/dev/shm" if os.access("/dev/shm", os.W_OK) else None


def _workdir() -> Path:
    return Path(tempfile.mkdtemp(prefix="int21-eval-", dir=_shm()))


_DIGESTS: dict[int, tuple[np.ndarray, str]] = {}


def _digest_of(arr: np.ndarray) -> str:
    """Input digests; the cached timing inputs (large, reused) are hashed once."""
    hit = _DIGESTS.get(id(arr))
    if hit is not None and hit[0] is arr:
        return hit[1]
    d = input_digest(arr)
    if arr.nbytes >= 1 << 20:
        if len(_DIGESTS) >= 4:
            _DIGESTS.clear()
        _DIGESTS[id(arr)] = (arr, d)
    return d


def _splice(base: np.ndarray, fresh: np.ndarray, seed: int) -> np.ndarray:
    """The second timing data set: the first one with a block of rows in the middle (never
    the first or last row) replaced by fresh data. A kernel that keys a result cache on its
    input pointer plus a few sampled values returns a stale answer for it."""
    out = base.copy()
    rows = out.shape[0] if out.ndim >= 2 else 0
    if rows >= 3:
        rng = np.random.default_rng(seed)
        n = max(1, rows // 64)
        start = int(rng.integers(1, max(2, rows - n)))
        out[start:start + n] = fresh[start:start + n]
    elif out.size >= 3:
        out.reshape(-1)[out.size // 2] = fresh.reshape(-1)[out.size // 2]
    return out


def _share(workdir: Path) -> None:
    """Let the child, which drops to an unprivileged user when we are root, use the folder.
    Inputs are read-only for it; hard-linked shared inputs are never touched (a chmod
    through a link would change the shared file for every later evaluation)."""
    if os.geteuid() != 0:
        return
    os.chmod(workdir, 0o777)
    for p in workdir.iterdir():
        st = p.lstat()
        if st.st_nlink > 1 or st.st_uid != os.geteuid():
            # Files an earlier child made (its outputs, CuPy's cache) stay as that child left
            # them: made read-only, the sanity re-check's child could not write its outputs.
            continue
        os.chmod(p, 0o444 if p.is_file() else 0o777)
