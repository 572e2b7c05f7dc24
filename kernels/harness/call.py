"""One call of a kernel on the caller's own arrays, through the evaluator's path.

Static checks → compile (cached) → audit → a fresh sandbox child (limits, isolation,
seccomp, guarded and poisoned buffers, authenticated records) that runs the kernel and
writes its outputs to files. The caller's process never loads kernel code: this is how
``kernels.library`` runs a promoted kernel. No reference is computed and nothing is judged
beyond what the child itself checks (inputs unchanged, guard regions intact, two runs
giving the same bits); the kernel was judged when it was promoted.
"""
from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import numpy as np

from kernels import targets, workloads
from kernels.harness.evaluator import _ARTIFACT, EvalSettings, Evaluator, _Case, _death, _workdir
from kernels.harness.static import check_source
from kernels.spec import Shape, Workload
from kernels.targets.base import CompileFailure


# Binaries (by content) that passed the audit in this process: the same bytes need no second
# audit (it runs nm/objdump, ~0.1 s); a changed file is audited again.
_AUDITED: set[tuple[str, str]] = set()


class KernelCallError(RuntimeError):
    """The kernel could not be run on these arrays; the message says why in plain words."""


def call_kernel(source: str, params: dict, workload: Workload | str, target: str, *, arrays: dict,
                dims: dict, scalars: dict | None = None, settings: EvalSettings | None = None) -> dict:
    """Run ``source`` once on ``arrays`` (float32, by input name) with the shape ``dims``
    and the ``scalars`` (f32 args). Returns the outputs by name (NumPy float32 arrays).
    Raises :class:`KernelCallError` for a kernel that is refused, does not compile, fails
    its audit, crashes, times out, writes its inputs or out of bounds, or tampers with the
    protocol; ``ValueError`` for arrays that do not fit the workload."""
    wl = workloads.get(workload) if isinstance(workload, str) else workload
    tgt = targets.get(target)
    ok, why = tgt.available()
    if not ok:
        raise KernelCallError(f"target {target} is not available here: {why}")
    runnable, why_not = tgt.can_run()
    if not runnable:
        raise KernelCallError(f"target {target} cannot run kernels here: {why_not}")
    settings = settings or EvalSettings(timing=False)
    findings = check_source(source, tgt.language)
    if findings:
        raise KernelCallError(f"refused before compiling: {findings[0].sentence()}")
    options = {"compile_timeout": settings.compile_timeout, "fast_math": settings.fast_math, "entry": "kernel",
               "params": params, "arch": settings.arch, **settings.resource_limits}
    art = tgt.compile(source, params, options)
    if isinstance(art, CompileFailure):
        raise KernelCallError(f"did not compile: {art.reason}")
    binary = hashlib.sha256(Path(art.path).read_bytes()).hexdigest()
    if (tgt.name, binary) not in _AUDITED:
        audit = tgt.audit(art, options)
        if not audit.ok:
            raise KernelCallError(f"the compiled kernel {audit.problems[0]}")
        _AUDITED.add((tgt.name, binary))

    shape = Shape(tuple((d, int(dims[d])) for d in wl.shape_dims))
    case = _Case("call", "call", shape, "caller", 0)
    case.inputs = {n: np.ascontiguousarray(arrays[n], dtype=np.float32) for n in wl.input_names()}
    case.scalars = {n: float(v) for n, v in (scalars or {}).items()}
    ev = Evaluator(settings)
    ev._target, ev._params = tgt.name, params
    workdir = _workdir()
    try:
        shutil.copyfile(art.path, workdir / _ARTIFACT[tgt.name])
        for name, arr in case.inputs.items():
            np.save(workdir / f"in_{case.id}_{name}.npy", arr, allow_pickle=False)
        run = ev._launch(wl, workdir, "call", cases=[case], timing_case=None)
        return _outputs(wl, run, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _outputs(wl: Workload, run, workdir: Path) -> dict:
    if run.tampered:
        raise KernelCallError(run.tampered)
    done = any(r.get("kind") == "done" for r in run.records)
    rec = next((r for r in run.records if r.get("kind") == "case"), None)
    if run.timed_out or not done or rec is None:
        raise KernelCallError(_death(run, "while being called")[1])
    if rec["problems"]:
        raise KernelCallError(f"the kernel misbehaved: {rec['problems'][0]}")
    if wl.deterministic and not rec.get("deterministic", True):
        raise KernelCallError("two runs on the same inputs gave different bits (the kernel reads memory it "
                              "never wrote, or races)")
    return {name: np.load(workdir / path, allow_pickle=False) for name, path in rec["outputs"].items()}
