"""One call of a kernel on the caller's own arrays, through the evaluator's path.

Static checks → compile (cached) → audit → the target's sandbox process (the trusted runner,
isolated, seccomp, guarded and poisoned buffers) that runs the kernel once; the outputs are
read back from shared memory. The caller's process never loads kernel code: this is how
``kernels.library`` runs a promoted kernel. No reference is computed and nothing is judged
beyond what the harness sees directly (inputs unwritable, guard regions intact, two runs
giving the same bits); the kernel was judged when it was promoted.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from kernels import targets, workloads
from kernels.harness.arena import Arena
from kernels.harness.box import Box
from kernels.harness.phases import _poison, _scribble
from kernels.harness.settings import EvalSettings
from kernels.harness.static import check_source
from kernels.harness.verdicts import reply_problem
from kernels.spec import Shape, Workload
from kernels.targets.base import CompileFailure

# Binaries (by content) that passed the audit in this process: the same bytes need no second
# audit (it runs nm/objdump, ~0.1 s); a changed file is audited again.
_AUDITED: set[tuple[str, str]] = set()
# Sources (by content, language and size limit) that passed the static checks in this process:
# the checks are a pure function of those, and cost ~1.6 s on a whole engine's 800 KiB source,
# which a greedy-decode loop calls once per token.
_CHECKED: set[tuple[str, str, int | None]] = set()


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
    key = (tgt.language, hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest(), wl.max_source_bytes)
    if key not in _CHECKED:
        findings = check_source(source, tgt.language, max_bytes=wl.max_source_bytes)
        if findings:
            raise KernelCallError(f"refused before compiling: {findings[0].sentence()}")
        _CHECKED.add(key)
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
    exe = tgt.prepare(art, wl, options)

    shape = Shape(tuple((d, int(dims[d])) for d in wl.shape_dims))
    inputs = {n: np.ascontiguousarray(arrays[n], dtype=np.float32) for n in wl.input_names()}
    out_shapes = {n: tuple(int(v) for v in s) for n, s in wl.out_shapes(shape).items()}
    for n, a in inputs.items():
        if a.size == 0:
            raise ValueError(f"input {n} is empty")
    scalars = {n: float(v) for n, v in (scalars or {}).items()}
    rng = np.random.default_rng()
    box = Box()
    try:
        with Arena("inputs", {n: a.shape for n, a in inputs.items()}) as ins, Arena("outputs", out_shapes) as outs:
            for n, a in inputs.items():
                ins.array(n)[...] = a
            proc = tgt.start(exe, inputs=ins, outputs=outs, box=box, settings=settings, workload=wl, params=params)
            try:
                if not proc.ready.ok:
                    bad = reply_problem(proc.ready, proc, when="while loading the kernel", where="", inputs=ins,
                                        outputs=outs)
                    raise KernelCallError(bad[1] if bad else "the kernel's process did not start")
                tokens = tgt.call_tokens(wl, shape, scalars, inputs={n: ins.offset(n) for n in inputs},
                                         outputs={n: outs.offset(n) for n in out_shapes}, params=params)
                runs = []
                for attempt, perturb in enumerate((0x5A, 0xC3)):
                    for n in out_shapes:
                        _poison(outs.array(n), rng) if attempt == 0 else _scribble(outs.array(n), rng)
                    reply = proc.call(tokens, perturb=perturb, ncalls=1, nargs=len(wl.args))
                    bad = reply_problem(reply, proc, when="while being called", where="", inputs=ins, outputs=outs)
                    if bad:
                        raise KernelCallError(bad[1])
                    state = tgt.call_problems(reply, proc, inputs=ins, outputs=outs, threads_declared=None)
                    if state:
                        raise KernelCallError(f"the kernel misbehaved: {state[0][1]}")
                    for n in out_shapes:
                        if not outs.guards_intact(n):
                            raise KernelCallError(f"the kernel misbehaved: memory around output {n} was written "
                                                  "(out of bounds)")
                    runs.append({n: outs.array(n).copy() for n in out_shapes})
            finally:
                proc.close()
    finally:
        box.close()
    if wl.deterministic and not all(np.array_equal(runs[0][n].view(np.uint32), runs[1][n].view(np.uint32))
                                    for n in out_shapes):
        raise KernelCallError("two runs on the same inputs gave different bits (the kernel reads memory it "
                              "never wrote, or races)")
    return runs[0]
