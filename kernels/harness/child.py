"""The sandbox child: the only process that ever loads candidate code. Used once.

It reads a plan (written by the evaluator), sets limits on itself, isolates itself where
the host allows (no network, an unprivileged user), loads the candidate, and for every
correctness case: fills guarded input buffers, NaN-poisons guarded outputs, calls the
kernel twice, and saves the outputs for the parent to judge. It never sees expected
outputs: the parent computes the reference in float64 and compares.

Then it times the candidate interleaved with the baselines on the same inputs, checking
that every timed call produced the same bits as the verified one.

Records go to fd 3 as JSON lines; the last is ``{"kind": "done"}``. A child that dies
before that is a crash, whatever its exit code.
"""
from __future__ import annotations

import ctypes
import hmac
import json
import os
import resource
import statistics
import sys
import time
from importlib import import_module

import numpy as np

from kernels.harness import calm
from kernels.harness.verify import input_digest

GUARD_BYTES = 4096
GUARD_WORD = np.uint32(0x7FA5DEAD)   # a NaN with a payload no kernel computes by accident
POISON_WORD = np.uint32(0x7FC0BEEF)  # quiet NaN for outputs
ALIGN = 64

_proto = None
_proto_fd = 3
_key = b""
_seq = 0


def emit(kind: str, **fields) -> None:
    """One record on the protocol pipe, numbered and authenticated with the plan's key
    (the parent rejects a session whose records are out of sequence or forged)."""
    global _proto, _seq
    if _proto is None:
        _proto = os.fdopen(_proto_fd, "w", buffering=1)
    _seq += 1
    record = {"kind": kind, "t": round(time.monotonic(), 4), "seq": _seq, **fields}
    body = json.dumps(record, sort_keys=True)
    record["mac"] = hmac.new(_key, body.encode(), "sha256").hexdigest()
    _proto.write(json.dumps(record) + "\n")


# --------------------------------------------------------------------------- guarded buffers

class Guarded:
    """A float32 array with guard words on both sides, 64-byte aligned."""

    def __init__(self, shape):
        self.shape = tuple(int(d) for d in shape)
        n = int(np.prod(self.shape)) if self.shape else 1
        self.words = n
        gw = GUARD_BYTES // 4
        raw = np.empty(gw * 2 + n + ALIGN // 4, dtype=np.uint32)
        shift = (-raw.ctypes.data % ALIGN) // 4
        self.raw = raw
        self.lo = raw[shift:shift + gw]
        self.body = raw[shift + gw:shift + gw + n]
        self.hi = raw[shift + gw + n:shift + gw * 2 + n]
        self.array = self.body.view(np.float32).reshape(self.shape)
        self.lo.fill(GUARD_WORD)
        self.hi.fill(GUARD_WORD)

    @property
    def ptr(self) -> int:
        return self.body.ctypes.data

    def poison(self, rng=None, fill=None) -> None:
        """Quiet NaNs; with ``rng`` a fresh payload each time, so a kernel cannot tell a
        checked call from another by the bytes it finds in its output. ``fill``: the
        harness's streaming fill (fill.c), which leaves none of the output in the cache."""
        word = POISON_WORD if rng is None else np.uint32(0x7FC00000 | int(rng.integers(1, 1 << 22)))
        if fill is None:
            self.body.fill(word)
        else:
            fill(self.ptr, self.words, int(word))

    def scribble(self, rng) -> None:
        """Random finite values: an output element the kernel does not write stays wrong."""
        self.array[...] = rng.uniform(-1e3, 1e3, self.array.shape).astype(np.float32)

    def guards_intact(self) -> bool:
        return bool((self.lo == GUARD_WORD).all() and (self.hi == GUARD_WORD).all())


# --------------------------------------------------------------------------- isolation

def isolate(plan: dict) -> list[str]:
    """Best-effort OS isolation on top of the limits; returns what was applied."""
    applied = []
    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_NO_NEW_PRIVS, PR_SET_DUMPABLE = 38, 4
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0:
        applied.append("no_new_privs")
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    if os.geteuid() == 0 and plan.get("isolate", True):
        CLONE_NEWNET = 0x40000000
        if libc.unshare(CLONE_NEWNET) == 0:
            applied.append("no_network")
        uid = plan.get("run_as_uid", 65534)
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            applied.append(f"uid_{uid}")
        except OSError:
            pass
    return applied


def _mallopt(libc, perturb: int) -> None:
    """Correctness runs only (the timing child never calls this): fill fresh heap memory
    with ``perturb`` so reads of memory the kernel never wrote differ between the two runs.
    Large blocks stay on the heap (perturbed) and are not trimmed back to the OS on free."""
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_PERTURB = -1, -3, -6
    libc.mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024)
    libc.mallopt(M_TRIM_THRESHOLD, 1 << 30)
    libc.mallopt(M_PERTURB, perturb)


# --------------------------------------------------------------------------- the candidate

class CpuKernel:
    """Calls the candidate's ``kernel`` through ctypes with the workload's ABI."""

    def __init__(self, artifact: str, args: list[dict], entry: str):
        self.lib = ctypes.CDLL(os.path.abspath(artifact), mode=os.RTLD_NOW | os.RTLD_LOCAL)
        self.fn = getattr(self.lib, entry)
        types = {"in": ctypes.c_void_p, "out": ctypes.c_void_p, "dim": ctypes.c_int64, "f32": ctypes.c_float}
        self.fn.argtypes = [types[a["kind"]] for a in args]
        self.fn.restype = None
        self.args = args

    def bind(self, buffers: dict, dims: dict, scalars: dict):
        values = []
        for a in self.args:
            if a["kind"] in ("in", "out"):
                values.append(buffers[a["name"]].ptr)
            elif a["kind"] == "dim":
                values.append(int(dims[a["name"]]))
            else:
                values.append(float(scalars[a["name"]]))
        fn = self.fn
        return lambda: fn(*values)


# --------------------------------------------------------------------------- phases

class Case:
    """Inputs loaded into guarded buffers, outputs allocated, output files opened — all
    before the candidate is loaded, because afterwards the child may open no file."""

    def __init__(self, spec: dict, out_files: bool = True):
        self.spec = spec
        self.inputs = {}
        for name, path in spec["inputs"].items():
            data = np.load(path, allow_pickle=False)
            g = Guarded(data.shape)
            g.array[...] = data
            self.inputs[name] = g
        # A second data set (timing only): rotated into the same buffers between calls, so
        # a kernel that caches its answer by input address returns a stale one.
        self.alt = {name: np.load(path, allow_pickle=False) for name, path in spec.get("inputs_b", {}).items()}
        self.first = {name: g.array.copy() for name, g in self.inputs.items()} if self.alt else {}
        for sets, digests in ((self.first, spec.get("input_digests", {})), (self.alt, spec.get("input_digests_b", {}))):
            for name, arr in sets.items():
                if input_digest(arr) != digests[name]:
                    raise RuntimeError(f"timing input {name} on disk does not match the evaluator's digest")
        self.current = "a"
        self.copy = None   # the harness's streaming copy (Streams.copy), set by the timing child
        self.outputs = {name: Guarded(shape) for name, shape in spec["outputs"].items()}
        self.files = {}
        if out_files:
            for run in ("a", "b"):
                for name in spec["outputs"]:
                    self.files[(run, name)] = open(f"out_{spec['id']}_{run}_{name}.npy", "wb")

    def buffers(self) -> dict:
        return {**self.inputs, **self.outputs}

    def use(self, which: str) -> None:
        if which == self.current or not self.alt:
            return
        for name, g in self.inputs.items():
            src = self.alt[name] if which == "b" else self.first[name]
            if self.copy is not None and src.dtype == g.array.dtype and src.shape == g.array.shape:
                self.copy(g.array, src)   # no dirty input lines for the next timed call to write back
            else:
                np.copyto(g.array, src)
        self.current = which

    def save(self, run: str, name: str, arr: np.ndarray) -> str:
        f = self.files[(run, name)]
        np.save(f, arr, allow_pickle=False)
        f.flush()
        return f"out_{self.spec['id']}_{run}_{name}.npy"

    def check_inputs(self) -> list[str]:
        problems = []
        digests = self.spec["input_digests_b"] if self.current == "b" else self.spec["input_digests"]
        for name, g in self.inputs.items():
            if self.alt:
                # Large timing inputs: compare with the copy loaded before the candidate was
                # (checked against the evaluator's digest at load), which is 10x cheaper.
                pristine = self.alt[name] if self.current == "b" else self.first[name]
                same = np.array_equal(g.array.view(np.uint32), pristine.view(np.uint32))
            else:
                same = input_digest(g.array) == digests[name]
            if not same:
                problems.append(f"input {name} was modified")
            if not g.guards_intact():
                problems.append(f"memory around input {name} was written")
        for name, g in self.outputs.items():
            if not g.guards_intact():
                problems.append(f"memory around output {name} was written (out of bounds)")
        return problems


def run_correctness(kernel: CpuKernel, case: Case, libc, rng) -> None:
    """Two calls on the same inputs: the first into NaN-poisoned outputs (a fresh NaN
    payload), the second into outputs holding random finite values and with a different
    malloc perturbation. Both must give the same bits."""
    spec = case.spec
    call = kernel.bind(case.buffers(), spec["dims"], spec.get("scalars", {}))
    runs = []
    for attempt, perturb in enumerate((0x5A, 0xC3)):
        _mallopt(libc, perturb)
        for g in case.outputs.values():
            g.poison(rng) if attempt == 0 else g.scribble(rng)
        emit("call", case=spec["id"], attempt=attempt)
        call()
        problems = case.check_inputs()
        if problems:
            emit("case", id=spec["id"], problems=problems)
            return
        runs.append({name: g.array.copy() for name, g in case.outputs.items()})
    saved = {name: case.save("a", name, arr) for name, arr in runs[0].items()}
    identical = all(np.array_equal(runs[0][n].view(np.uint32), runs[1][n].view(np.uint32)) for n in runs[0])
    second = {} if identical else {name: case.save("b", name, arr) for name, arr in runs[1].items()}
    emit("case", id=spec["id"], outputs=saved, second_outputs=second, problems=[], deterministic=identical)


def _load_baselines(timing: dict, case: Case, dims: dict, scalars: dict) -> tuple[list, list]:
    impls, notes = [], []
    for b in timing.get("baselines", []):
        if b.get("requires"):
            try:
                import_module(b["requires"])
            except Exception as exc:
                notes.append(f"baseline {b['name']} skipped: {b['requires']} is not importable ({exc})")
                continue
        mod, _, attr = b["fn"].partition(":")
        # The baselines write into the candidate's own output buffers (poisoned again before
        # every candidate call, zeroed after every baseline call): every implementation writes
        # the same pages, and the child holds one set of outputs instead of one per baseline.
        outs = case.outputs
        try:
            factory = getattr(import_module(mod), attr)
            call = factory({n: g.array for n, g in case.inputs.items()} | dict(scalars),
                           {n: g.array for n, g in outs.items()}, dict(dims))
            call()
        except Exception as exc:
            notes.append(f"baseline {b['name']} failed to run: {type(exc).__name__}: {exc}")
            continue
        for g in outs.values():  # no right answer lying around when the candidate runs
            g.body.fill(0)
        impls.append({"name": b["name"], "call": call, "outputs": outs})
    return impls, notes


def _cache_flusher(timing: dict):
    if not timing.get("cold_cache"):
        return lambda: None
    scratch = np.zeros(timing.get("flush_bytes", 256 << 20) // 8, dtype=np.float64)

    def flush():
        np.add(scratch, 1.0, out=scratch)
    return flush


def _blas_info() -> list:
    try:
        from threadpoolctl import threadpool_info
        return [{k: i.get(k) for k in ("internal_api", "architecture", "num_threads", "version")}
                for i in threadpool_info()]
    except Exception:
        return []


class Streams:
    """The harness's streaming stores (fill.c): fill and copy without leaving dirty lines."""

    def __init__(self, lib):
        self.fill_nt, self.copy_nt = lib.i21_fill_nt, lib.i21_copy_nt
        self.fill_nt.restype = self.copy_nt.restype = None
        self.fill_nt.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint32]
        self.copy_nt.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        self.threads = os.cpu_count() or 1

    def fill(self, ptr: int, words: int, word: int) -> None:
        self.fill_nt(ptr, words, word)

    def copy(self, dst: np.ndarray, src: np.ndarray) -> None:
        assert dst.nbytes == src.nbytes and dst.flags.c_contiguous and src.flags.c_contiguous
        self.copy_nt(dst.ctypes.data, src.ctypes.data, dst.nbytes, self.threads)


def _streams(timing: dict, notes: list) -> Streams | None:
    """The harness's streaming stores (fill.c), or None for numpy's fill and copy."""
    path = timing.get("fill_lib")
    if not path:
        return None
    try:
        return Streams(ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_LOCAL))
    except (OSError, AttributeError) as exc:
        notes.append(f"poison fill through the cache: {exc}")
        return None


def prepare_timing(timing: dict) -> tuple:
    """Trusted set-up, before isolation and before the candidate is loaded: the inputs,
    the baselines (torch.compile imports and writes its cache lazily), and the poison fill."""
    case = Case(timing["case"])
    dims, scalars = timing["case"]["dims"], timing["case"].get("scalars", {})
    baselines, notes = _load_baselines(timing, case, dims, scalars)
    try:  # opened now: after isolation the child opens nothing
        stat_fd = os.open("/proc/stat", os.O_RDONLY)
    except OSError:
        stat_fd = None
    return case, baselines, notes, _streams(timing, notes), stat_fd


def _host_sample(stat_fd) -> tuple:
    """(/proc/stat text, this process's CPU seconds, wall seconds): see calm.others_share."""
    try:
        text = os.pread(stat_fd, 1 << 16, 0).decode() if stat_fd is not None else None
    except OSError:
        text = None
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return text, ru.ru_utime + ru.ru_stime, time.perf_counter()


def run_timing(kernel: CpuKernel, timing: dict, prepared: tuple, libc, rng) -> None:
    case, baselines, notes, streams, stat_fd = prepared
    fill = streams.fill if streams else None
    case.copy = streams.copy if streams else None
    dims, scalars = timing["case"]["dims"], timing["case"].get("scalars", {})
    cand_call = kernel.bind(case.buffers(), dims, scalars)
    outs = case.outputs
    verified = {}
    saved = {}
    for which in ("a", "b") if case.alt else ("a",):
        case.use(which)
        for g in outs.values():
            g.poison(rng)
        cand_call()
        problems = case.check_inputs()
        if problems:
            emit("timing", problems=problems)
            return
        verified[which] = {n: g.array.copy() for n, g in outs.items()}
        saved[which] = {n: case.save(which, n, arr) for n, arr in verified[which].items()}
    emit("phase", phase="verified calls")
    impls = [{"name": "candidate", "call": cand_call, "outputs": outs}] + baselines
    probe = _copy_probe(case, streams)
    if probe:
        impls.append(probe)
    flush = _cache_flusher(timing)
    for impl in impls:
        # Baselines were already called once while being prepared.
        for _ in range(timing.get("warmup", 2) if impl is impls[0] else 1):
            t0 = time.perf_counter()
            impl["call"]()
            impl["warm_s"] = time.perf_counter() - t0
        if impl is not impls[0]:
            for g in impl["outputs"].values():
                g.body.fill(0)
    # A baseline much slower than the candidate is timed every `stride`-th round (still
    # interleaved, same inputs), so a 75 ms NumPy call does not dominate the session.
    min_calls, max_calls = timing.get("min_calls", 20), timing.get("max_calls", 200)
    base_min = timing.get("baseline_min_calls", 7)
    max_stride = max(1, min_calls // base_min)
    for impl in impls:
        ratio = impl["warm_s"] / max(impls[0]["warm_s"], 1e-9)
        impl["stride"] = 1 if impl is impls[0] else int(max(1, min(max_stride, ratio)))
    emit("phase", phase="warm")
    samples = {impl["name"]: [] for impl in impls}
    cpu_s = wall_s = 0.0
    mismatch_at = None
    calls = 0
    started = time.perf_counter()
    host_before = _host_sample(stat_fd)
    budget = timing.get("budget_seconds", 1.0)
    for rnd in range(max_calls):
        which = "b" if (case.alt and rnd % 2) else "a"
        case.use(which)
        order = impls[rnd % len(impls):] + impls[:rnd % len(impls)]
        for impl in order:
            if rnd % impl["stride"]:
                continue
            for g in impl["outputs"].values():
                g.poison(rng, fill)  # in DRAM, not in the cache: no write-back of it inside the timing
            flush()
            is_cand = impl["name"] == "candidate"
            if is_cand:
                r0 = resource.getrusage(resource.RUSAGE_SELF)
            t0 = time.perf_counter_ns()
            impl["call"]()
            t1 = time.perf_counter_ns()
            samples[impl["name"]].append((t1 - t0) / 1e6)
            if is_cand:
                r1 = resource.getrusage(resource.RUSAGE_SELF)
                cpu_s += (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
                wall_s += (t1 - t0) / 1e9
                calls += 1
                ref = verified[which]
                if mismatch_at is None and not all(
                        np.array_equal(outs[n].array.view(np.uint32), ref[n].view(np.uint32)) for n in outs):
                    mismatch_at = calls
            else:
                for g in impl["outputs"].values():  # leave nothing a candidate could copy
                    g.body.fill(0)
        timed = [samples[impl["name"]] for impl in impls if not impl.get("probe")]
        if rnd + 1 >= min_calls and all(len(v) >= base_min for v in timed):
            elapsed = time.perf_counter() - started
            precise = all(_rel_err(v) < timing.get("target_rel_err", 0.02) for v in timed)
            if precise or elapsed > budget:
                break
    host_after = _host_sample(stat_fd)
    emit("phase", phase="timed")
    problems = case.check_inputs()
    probes = {p["name"]: {"samples": samples.pop(p["name"]), "bytes": p["bytes"]} for p in impls if p.get("probe")}
    emit("timing", outputs=saved["a"], outputs_b=saved.get("b", {}), samples=samples, problems=problems,
         probes=probes,
         timed_calls=calls, mismatch_at_call=mismatch_at, cpu_seconds=cpu_s, wall_seconds=wall_s, notes=notes,
         blas=timing.get("blas", []), poison_fill="cached" if fill is None else "streaming",
         others=calm.others_share(host_before, host_after))


def _copy_probe(case: Case, streams: Streams | None) -> dict | None:
    """The session's copy probe, timed interleaved like a baseline but never one: the largest
    input streamed into the largest output (no poison before it, nothing to hide after: it
    holds no answer). Its bytes over its median are the memory system's pace in the very
    minute the candidate was timed, which the report sets the candidate's own beside."""
    if streams is None or not case.inputs or not case.outputs:
        return None
    src = max(case.inputs.values(), key=lambda g: g.words).body
    dst = max(case.outputs.values(), key=lambda g: g.words).body
    n = min(src.size, dst.size)
    return {"name": "copy", "call": lambda: streams.copy(dst[:n], src[:n]), "outputs": {}, "probe": True,
            "bytes": 2 * n * src.itemsize}


def _rel_err(s: list[float]) -> float:
    if len(s) < 4:
        return 1.0
    q = statistics.quantiles(s, n=4)
    med = statistics.median(s)
    return (q[2] - q[0]) / med / (len(s) ** 0.5) if med > 0 else 1.0


# --------------------------------------------------------------------------- entry

def main(plan_path: str) -> int:
    with open(plan_path) as f:
        plan = json.load(f)
    from kernels.harness import seccomp
    from kernels.harness.sandbox import Limits, apply_limits
    global _proto_fd, _key
    _proto_fd = int(os.environ.pop("INT21_PROTO_FD", 3))
    _key = bytes.fromhex(plan.pop("key", ""))
    # The environment is already minimal (sandbox.minimal_env); give tools a home of their own,
    # and let idle OpenMP threads sleep, so no implementation's spinning pool steals the cores
    # from the next one in the interleaved timing.
    os.environ["HOME"] = os.environ["TMPDIR"] = os.getcwd()
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    os.environ.update(plan.get("env", {}))
    emit("phase", phase="prepare")
    try:
        import torch
        torch.set_num_threads(os.cpu_count() or 1)
    except Exception:
        pass
    gpu = plan.get("target") == "cuda"
    rng = np.random.default_rng(int.from_bytes(os.urandom(8), "little"))
    cases = [] if gpu else [Case(spec) for spec in plan["cases"]]
    prepared = prepare_timing(plan["timing"]) if plan.get("timing") and not gpu else None
    if prepared is not None:
        plan["timing"]["blas"] = _blas_info()
    if gpu:
        # the CUDA context (device files) and the baselines' modules, before dropping to nobody
        from kernels.targets import cuda_runner
        cuda_runner.prepare(plan)
    applied = isolate(plan)
    limits = Limits(**plan["limits"])
    # A CUDA context reserves far more address space than any RLIMIT_AS we could set;
    # device memory is bounded by the device. The other limits stay.
    apply_limits(limits, relative_memory=True, address_space=not gpu)
    libc = ctypes.CDLL(None)
    if gpu:
        emit("hello", pid=os.getpid(), isolation=applied)
        from kernels.targets import cuda_runner
        cuda_runner.run(plan, emit)
        emit("done")
        return 0
    emit("phase", phase="load")
    kernel = CpuKernel(plan["artifact"], plan["args"], plan.get("entry", "kernel"))
    if plan.get("seccomp", True):
        why_not = seccomp.install()
        applied.append("seccomp" if why_not is None else f"no seccomp: {why_not}")
    emit("hello", pid=os.getpid(), isolation=applied)
    emit("phase", phase="correctness")
    for case in cases:
        run_correctness(kernel, case, libc, rng)
    if prepared is not None:
        emit("phase", phase="timing")
        run_timing(kernel, plan["timing"], prepared, libc, rng)
    emit("done")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
