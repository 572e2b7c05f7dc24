"""The GPU side of the sandbox child (GPU hosts only): loads the candidate's cubin, checks
it case by case, then times it against the baselines. Importable without CuPy.

Called from the sandbox child after it has set its limits and isolated itself, as
``run(plan, emit)``; the caller emits ``hello`` before and ``done`` after. Same records as
:mod:`kernels.harness.child`:

- ``phase`` (load, correctness, timing) and ``device`` (the GPU and the kernel's attributes);
- per case: ``call`` before each launch, then ``case`` with the saved outputs, problems
  and whether two runs gave the same bits;
- ``timing`` with the outputs of the first timed call on each data set (``outputs``, and
  ``outputs_b`` when the timing case has ``inputs_b``), per-implementation samples (ms, from
  CUDA events on this child's own stream), problems, timed_calls, mismatch_at_call, notes.

Serves every target whose artifact CuPy loads as a module (``cuda`` and ``ptx``): the plan is
the CPU plan plus ``"artifact"``, the target's ``artifact_name`` (a ``.cubin``; ``.ptx`` and
``.fatbin`` load too), and, in every case (and the timing case), ``"launch": {"grid": [gx, gy, gz], "block": [bx, by, bz], "shared": bytes}``.
Baseline factories get CuPy arrays (inputs + scalars, outputs, dims) and must run their
work on CuPy's current stream (this child's), so the events time it.

A CUDA error (illegal address, launch failure) ends the child with the error as the last
line of stderr: the context is unusable afterwards, and the parent reports a crash naming
the case and call from the last ``call`` record.
"""
from __future__ import annotations

import os
import statistics
import time
from importlib import import_module

import numpy as np

from kernels.harness.verify import input_digest

GUARD_BYTES = 4096                  # a multiple of 256: the body keeps CuPy's alignment
GUARD_WORD = 0x7FA5DEAD             # a NaN with a payload no kernel computes by accident
POISON_WORD = 0x7FC0BEEF            # quiet NaN for outputs
MIN_GPU_CALLS = 100


class DeviceBuffer:
    """A float32 device array with NaN-pattern guard words on both sides."""

    def __init__(self, cp, shape):
        self.cp = cp
        self.shape = tuple(int(d) for d in shape)
        n = int(np.prod(self.shape)) if self.shape else 1
        gw = GUARD_BYTES // 4
        self.raw = cp.empty(2 * gw + n, dtype=cp.uint32)
        self.lo, self.body, self.hi = self.raw[:gw], self.raw[gw:gw + n], self.raw[gw + n:]
        self.array = self.body.view(cp.float32).reshape(self.shape)
        self.lo.fill(GUARD_WORD)
        self.hi.fill(GUARD_WORD)

    def poison(self) -> None:
        self.body.fill(POISON_WORD)

    def guards_intact(self) -> bool:
        cp = self.cp
        return bool(cp.all(self.lo == GUARD_WORD)) and bool(cp.all(self.hi == GUARD_WORD))


class DeviceCase:
    def __init__(self, cp, spec: dict):
        self.spec = spec
        self.inputs = {}
        for name, path in spec["inputs"].items():
            data = np.ascontiguousarray(np.load(path, allow_pickle=False), dtype=np.float32)
            buf = DeviceBuffer(cp, data.shape)
            buf.array.set(data)
            self.inputs[name] = buf
        self.outputs = {name: DeviceBuffer(cp, shape) for name, shape in spec["outputs"].items()}
        self.digests = spec["input_digests"]
        # The timing case's second data set (the first with a block of rows replaced): kept
        # in plain device arrays and copied into the same guarded buffers between rounds, so
        # a kernel that caches its answer by input address returns a stale one.
        self.sets = {}
        if spec.get("inputs_b"):
            self.sets["a"] = ({n: buf.array.copy() for n, buf in self.inputs.items()}, spec["input_digests"])
            self.sets["b"] = ({n: cp.asarray(np.ascontiguousarray(np.load(p, allow_pickle=False), dtype=np.float32))
                               for n, p in spec["inputs_b"].items()}, spec["input_digests_b"])
        self.dims = spec["dims"]
        self.scalars = spec.get("scalars", {})
        launch = spec["launch"]
        self.grid = tuple(int(v) for v in launch["grid"])
        self.block = tuple(int(v) for v in launch["block"])
        self.shared = int(launch.get("shared", 0))

    def use(self, which: str) -> None:
        """Copy data set ``which`` ("a" or "b") into the input buffers (not timed)."""
        arrays, self.digests = self.sets[which]
        for name, src in arrays.items():
            self.inputs[name].array[...] = src

    def check(self) -> list[str]:
        problems = []
        for name, buf in self.inputs.items():
            if input_digest(buf.array.get()) != self.digests[name]:
                problems.append(f"input {name} was modified")
            if not buf.guards_intact():
                problems.append(f"memory around input {name} was written")
        for name, buf in self.outputs.items():
            if not buf.guards_intact():
                problems.append(f"memory around output {name} was written (out of bounds)")
        return problems


ARTIFACT_KINDS = (".cubin", ".ptx", ".fatbin")   # what cuModuleLoad (CuPy's RawModule) takes


class Candidate:
    """The module's ``kernel`` with the workload's ABI: pointers, int64 dims, float32 scalars."""

    def __init__(self, cp, artifact: str, args: list[dict], entry: str):
        if not artifact.endswith(ARTIFACT_KINDS):
            raise ValueError(f"the GPU runner loads {', '.join(ARTIFACT_KINDS)} modules, not {artifact!r}")
        self.cp = cp
        self.module = cp.RawModule(path=os.path.abspath(artifact))
        self.fn = self.module.get_function(entry)
        self.args = args

    def attributes(self) -> dict:
        out = {}
        for key in ("num_regs", "local_size_bytes", "shared_size_bytes", "const_size_bytes",
                    "max_threads_per_block", "max_dynamic_shared_size_bytes", "binary_version"):
            try:
                out[key] = int(getattr(self.fn, key))
            except Exception:
                pass
        return out

    def launch_problems(self, case: DeviceCase) -> list[str]:
        threads = int(np.prod(case.block))
        limit = int(self.fn.max_threads_per_block)
        problems = []
        if threads > limit:
            problems.append(f"the launch asks for {threads} threads per block; this kernel allows at most {limit}")
        if min(case.grid) < 1 or min(case.block) < 1:
            problems.append(f"the launch geometry grid {case.grid} block {case.block} is empty")
        return problems

    def bind(self, case: DeviceCase):
        values = []
        for a in self.args:
            if a["kind"] == "in":
                values.append(case.inputs[a["name"]].array)
            elif a["kind"] == "out":
                values.append(case.outputs[a["name"]].array)
            elif a["kind"] == "dim":
                values.append(np.int64(case.dims[a["name"]]))
            else:
                values.append(np.float32(case.scalars[a["name"]]))
        values = tuple(values)
        fn, grid, block, shared = self.fn, case.grid, case.block, case.shared
        if shared > int(fn.max_dynamic_shared_size_bytes):
            fn.max_dynamic_shared_size_bytes = shared  # opt in above 48 KiB (Hopper: up to 227 KiB)
        return lambda: fn(grid, block, values, shared_mem=shared)


def _launch(call, stream, where: str) -> None:
    try:
        call()
        stream.synchronize()
    except Exception as exc:
        raise RuntimeError(f"CUDA error {where}: {type(exc).__name__}: {exc}") from exc


# --------------------------------------------------------------------------- phases

def run_correctness(cp, stream, kernel: Candidate, spec: dict, emit) -> None:
    case = DeviceCase(cp, spec)
    problems = kernel.launch_problems(case)
    if problems:
        emit("case", id=spec["id"], problems=problems)
        return
    call = kernel.bind(case)
    runs = []
    for attempt in range(2):
        for buf in case.outputs.values():
            buf.poison()
        emit("call", case=spec["id"], attempt=attempt)
        _launch(call, stream, f"in case {spec['id']}, call {attempt + 1}")
        problems = case.check()
        if problems:
            emit("case", id=spec["id"], problems=problems)
            return
        runs.append({name: buf.array.copy() for name, buf in case.outputs.items()})
    saved = {}
    for name, arr in runs[0].items():
        path = f"out_{spec['id']}_{name}.npy"
        np.save(path, cp.asnumpy(arr), allow_pickle=False)
        saved[name] = path
    identical = all(bool(cp.array_equal(runs[0][n].view(cp.uint32), runs[1][n].view(cp.uint32))) for n in runs[0])
    emit("case", id=spec["id"], outputs=saved, problems=[], deterministic=identical)


def _load_baselines(cp, stream, timing: dict, case: DeviceCase) -> tuple[list, list]:
    impls, notes = [], []
    for b in timing.get("baselines", []):
        if b.get("requires"):
            try:
                import_module(b["requires"])
            except Exception as exc:
                notes.append(f"baseline {b['name']} skipped: {b['requires']} is not importable ({exc})")
                continue
        mod, _, attr = b["fn"].partition(":")
        outs = {name: DeviceBuffer(cp, shape) for name, shape in case.spec["outputs"].items()}
        try:
            factory = getattr(import_module(mod), attr)
            call = factory({n: buf.array for n, buf in case.inputs.items()} | dict(case.scalars),
                           {n: buf.array for n, buf in outs.items()}, dict(case.dims))
            call()
            stream.synchronize()
        except Exception as exc:
            notes.append(f"baseline {b['name']} failed to run: {type(exc).__name__}: {exc}")
            continue
        impls.append({"name": b["name"], "call": call, "outputs": outs})
    return impls, notes


def _l2_flusher(cp, timing: dict):
    if not timing.get("cold_cache"):
        return lambda: None
    l2 = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id).get("l2CacheSize", 64 << 20)
    scratch = cp.empty(max(2 * int(l2), 8 << 20) // 4, dtype=cp.uint32)
    return lambda: scratch.fill(0x5A5A5A5A)


def run_timing(cp, stream, kernel: Candidate, timing: dict, emit) -> None:
    case = DeviceCase(cp, timing["case"])
    problems = kernel.launch_problems(case)
    if problems:
        emit("timing", problems=problems)
        return
    baselines, notes = _load_baselines(cp, stream, timing, case)
    cand_call = kernel.bind(case)
    outs = case.outputs
    # The first call on each data set is the verified one (the evaluator compares it with
    # its reference); every later call must reproduce those bits for the set it saw.
    first, saved = {}, {}
    for which in (("a", "b") if case.sets else ("a",)):
        if case.sets:
            case.use(which)
        for buf in outs.values():
            buf.poison()
        _launch(cand_call, stream, f"in the first timed call (data set {which})")
        problems = case.check()
        if problems:
            emit("timing", problems=problems)
            return
        first[which] = {n: buf.array.view(cp.uint32).copy() for n, buf in outs.items()}
        saved[which] = {}
        for name, arr in first[which].items():
            path = f"out_timing{'' if which == 'a' else '_b'}_{name}.npy"
            np.save(path, cp.asnumpy(arr.view(cp.float32)), allow_pickle=False)
            saved[which][name] = path
    impls = [{"name": "candidate", "call": cand_call, "outputs": outs}] + baselines
    flush = _l2_flusher(cp, timing)
    for impl in impls:
        for _ in range(max(2, timing.get("warmup", 2))):
            impl["call"]()
    stream.synchronize()

    samples = {impl["name"]: [] for impl in impls}
    mismatch_at = None
    calls = 0
    min_calls = max(int(timing.get("min_calls", MIN_GPU_CALLS)), MIN_GPU_CALLS)
    max_calls = max(int(timing.get("max_calls", 200)), min_calls)
    budget = float(timing.get("budget_seconds", 2.0))
    started = time.perf_counter()
    for rnd in range(max_calls):
        which = "b" if (case.sets and rnd % 2) else "a"
        if case.sets:
            case.use(which)
        verified = first[which]
        order = impls[rnd % len(impls):] + impls[:rnd % len(impls)]
        pending, checks = [], []
        for impl in order:
            for buf in impl["outputs"].values():
                buf.poison()
            flush()
            start, end = cp.cuda.Event(), cp.cuda.Event()
            start.record(stream)
            impl["call"]()
            end.record(stream)
            pending.append((impl["name"], start, end))
            if impl["name"] == "candidate":
                # enqueued after the end event, so not timed; read once the round is done
                checks.append(cp.stack([cp.array_equal(outs[n].array.view(cp.uint32), verified[n]) for n in outs]).all())
            else:
                for buf in impl["outputs"].values():  # leave nothing a candidate could copy
                    buf.body.fill(0)
        try:
            end.synchronize()
        except Exception as exc:
            raise RuntimeError(f"CUDA error while timing (round {rnd + 1}): {type(exc).__name__}: {exc}") from exc
        for name, start, end in pending:
            samples[name].append(float(cp.cuda.get_elapsed_time(start, end)))
        for ok in checks:
            calls += 1
            if mismatch_at is None and not bool(ok):
                mismatch_at = calls
        if rnd + 1 >= min_calls:
            precise = all(_rel_err(v) < float(timing.get("target_rel_err", 0.01)) for v in samples.values())
            if precise or time.perf_counter() - started > budget:
                break
    problems = case.check()
    emit("timing", outputs=saved["a"], outputs_b=saved.get("b", {}), samples=samples, problems=problems,
         timed_calls=calls,
         mismatch_at_call=mismatch_at, notes=notes)


def _rel_err(s: list[float]) -> float:
    if len(s) < 4:
        return 1.0
    q = statistics.quantiles(s, n=4)
    med = statistics.median(s)
    return (q[2] - q[0]) / med / (len(s) ** 0.5) if med > 0 else 1.0


# --------------------------------------------------------------------------- entry

def prepare(plan: dict) -> None:
    """Called by the child before it isolates itself (while it may still be root): import
    CuPy and the timing baselines' modules, and create the CUDA context on the plan's device.
    The driver opens /dev/nvidia* when the context is made; those files (and the project's
    folder, when it lives under root's home) may not be open to the unprivileged user the
    child becomes. Best effort: anything that fails here fails again, with its message, in
    :func:`run`. No candidate code is loaded here."""
    os.environ.setdefault("CUPY_CACHE_DIR", os.path.abspath(".cupy_cache"))
    timing = plan.get("timing") or {}
    for b in timing.get("baselines", []):
        for mod in (b.get("requires"), b["fn"].partition(":")[0]):
            if mod:
                try:
                    import_module(mod)
                except Exception:
                    pass
    try:
        import cupy as cp
        cp.cuda.Device(int(plan.get("device", 0))).use()
        cp.cuda.runtime.free(0)  # the classic way to make the (primary) context now
    except Exception:
        pass


def run(plan: dict, emit) -> None:
    """Everything between the child's ``hello`` and ``done`` for a CUDA plan."""
    # CuPy compiles its own helper kernels (fill, compare) and caches them under HOME,
    # which the isolated child does not have: keep the cache in the working folder.
    os.environ.setdefault("CUPY_CACHE_DIR", os.path.abspath(".cupy_cache"))
    import cupy as cp

    emit("phase", phase="load")
    device = cp.cuda.Device(int(plan.get("device", 0)))
    device.use()
    kernel = Candidate(cp, plan["artifact"], plan["args"], plan.get("entry", "kernel"))
    props = cp.cuda.runtime.getDeviceProperties(device.id)
    name = props.get("name", b"")
    emit("device", gpu=name.decode() if isinstance(name, bytes) else str(name),
         sm=f"sm_{props.get('major')}{props.get('minor')}", kernel=kernel.attributes())
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        emit("phase", phase="correctness")
        for spec in plan["cases"]:
            run_correctness(cp, stream, kernel, spec, emit)
        if plan.get("timing"):
            emit("phase", phase="timing")
            run_timing(cp, stream, kernel, plan["timing"], emit)
        stream.synchronize()
