"""A trusted sandbox process that is not the candidate: one baseline, or the copy probe.

Forked from the fork server (NumPy and torch already imported) or spawned fresh, on five
descriptors: stdout, stderr, 3 status (write), 4 control (read), 5 the inputs arena
(read-only). It reads its spec (one JSON line), maps the inputs, imports what it needs,
isolates itself (no network, the evaluation's unprivileged user, limits, a seccomp filter
that forbids the network and other processes' business but lets torch.compile run its
compiler). A trusted baseline is prepared just before that; a baseline built from a user's
model only after it — that model's code runs here, isolated, never in the evaluator. It never sees candidate code or the
candidate's outputs. Protocol: as the runner's (``runner.c``), with "done <seq> -".
"""
from __future__ import annotations

import ctypes
import json
import mmap
import os
import resource
import sys
import traceback
from importlib import import_module

import numpy as np

from kernels.harness import fill, seccomp   # imported now: after the drop, the interpreter's
                                             # own files may be out of the box user's reach

STATUS_FD, CONTROL_FD, INPUTS_FD, OUTPUTS_FD = 3, 4, 5, 6


def _say(text: str) -> None:
    data = (text + "\n").encode()
    while data:
        data = data[os.write(STATUS_FD, data):]


class _Lines:
    def __init__(self):
        self.buf = b""

    def read(self) -> str:
        while b"\n" not in self.buf:
            chunk = os.read(CONTROL_FD, 65536)
            if not chunk:
                os._exit(0)
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode()


# Standard modules code commonly imports lazily (a user's model, torch's own helpers): loaded
# before the drop, since the interpreter's files may be out of the box user's reach after it.
_PRELOAD = ("secrets", "tempfile", "uuid", "random", "inspect", "typing", "dataclasses", "copy", "warnings",
            "traceback", "contextlib", "hashlib", "pickle", "weakref", "textwrap", "string", "numbers",
            "decimal", "fractions", "statistics", "enum", "abc", "operator", "functools", "itertools")


def _isolate(spec: dict) -> list[str]:
    applied = []
    libc = ctypes.CDLL(None, use_errno=True)
    for name in _PRELOAD:
        try:
            import_module(name)
        except ImportError:
            pass
    if os.geteuid() == 0:
        home = spec.get("home")
        if home and os.path.isdir(home):
            # what set-up wrote there as root (torch.compile's cache) becomes the box user's
            for root, dirs, files in os.walk(home):
                for entry in dirs + files:
                    os.lchown(os.path.join(root, entry), int(spec["uid"]), int(spec["gid"]))
        if libc.unshare(0x40000000) == 0:      # CLONE_NEWNET
            applied.append("no_network")
        uid, gid = int(spec["uid"]), int(spec["gid"])
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
        applied.append(f"uid_{uid}")
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    cpu = int(spec.get("cpu_seconds", 600))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
    why = seccomp.install(profile="baseline")
    applied.append("seccomp" if why is None else f"no seccomp: {why}")
    return applied


def _views(spec: dict):
    size = int(spec["in_size"])
    mem = mmap.mmap(INPUTS_FD, max(size, 4096), mmap.MAP_SHARED, mmap.PROT_READ) if size else None
    words = np.frombuffer(mem, dtype=np.uint32) if mem is not None else None
    slots = []
    for slot in spec["slots"]:
        arrays = {}
        for name, (offset, shape) in slot.items():
            n = int(np.prod(shape)) if shape else 1
            flat = words[offset // 4: offset // 4 + n].view(np.float32)
            arrays[name] = flat.reshape(shape)
        slots.append(arrays)
    return mem, slots


def _prepare_baseline(spec: dict, slots: list[dict]) -> list:
    """One zero-argument call per input slot. On a GPU the inputs are copied to the device
    once and each call is timed by CUDA events on the baseline's own stream (its reply then
    carries the device time)."""
    mod, _, attr = spec["fn"].partition(":")
    factory = getattr(import_module(mod), attr)
    gpu = spec.get("timer") == "device"
    if gpu:
        import cupy as xp
    else:
        xp = np
    calls = []
    for inputs in slots:
        ins = {n: xp.asarray(a) for n, a in inputs.items()} if gpu else dict(inputs)
        outputs = {n: xp.zeros(tuple(s), dtype=np.float32) for n, s in spec["outputs"].items()}
        call = factory(ins | dict(spec.get("scalars", {})), outputs, dict(spec["dims"]), **spec.get("options", {}))
        call()
        calls.append(call)
    return calls


def _timed_batch(calls: list, order: list[int], gpu: bool) -> str:
    """Run the batch; the device time on a GPU ("-" on a CPU: the evaluator's clock times it)."""
    if not gpu:
        for i in order:
            calls[i % len(calls)]()
        return "-"
    import cupy as cp
    stream = cp.cuda.get_current_stream()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record(stream)
    for i in order:
        calls[i % len(calls)]()
    end.record(stream)
    end.synchronize()
    return repr(float(cp.cuda.get_elapsed_time(start, end)) / 1e3)


def _arenas(spec: dict):
    """The inputs (read-only) and outputs (read-write) arenas as uint32 words (device role)."""
    ins = mmap.mmap(INPUTS_FD, max(int(spec["in_size"]), 4096), mmap.MAP_SHARED, mmap.PROT_READ)
    outs = mmap.mmap(OUTPUTS_FD, max(int(spec["out_size"]), 4096), mmap.MAP_SHARED,
                     mmap.PROT_READ | mmap.PROT_WRITE)
    return np.frombuffer(ins, dtype=np.uint32), np.frombuffer(outs, dtype=np.uint32)


def _prepare_probe(spec: dict, slots: list[dict]) -> list:
    """The copy probe: the largest input streamed into a buffer of ``words`` floats (phases.probe_words)."""
    lib = ctypes.CDLL(spec["options"]["lib"], mode=os.RTLD_NOW | os.RTLD_LOCAL)
    streams = fill.Streams(lib)
    calls = []
    for inputs in slots:
        src = max(inputs.values(), key=lambda a: a.size).reshape(-1)
        n = min(src.size, int(spec["options"]["words"]))
        dst = np.empty(n, dtype=np.float32)
        calls.append(lambda dst=dst, src=src[:n]: streams.copy(dst, src))
    return calls


try:
    from threadpoolctl import threadpool_info
except ImportError:   # optional: the report then names no BLAS
    threadpool_info = None


def _blas_info() -> list:
    try:
        return [{k: i.get(k) for k in ("internal_api", "architecture", "num_threads", "version")}
                for i in threadpool_info()]
    except Exception:
        return []


def main() -> int:
    lines = _Lines()
    spec = json.loads(lines.read())
    os.environ["HOME"] = os.environ["TMPDIR"] = spec.get("home") or os.getcwd()
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(os.environ["HOME"], "inductor")
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import torch
        torch.set_num_threads(int(spec.get("threads") or os.cpu_count() or 1))
    except Exception:
        pass
    for name in (spec.get("requires"), spec.get("fn", "").partition(":")[0]):
        if name:
            try:
                import_module(name)
            except Exception as exc:
                _say(f"failed {json.dumps(f'{name} is not importable ({type(exc).__name__}: {exc})')}")
                return 0
    if spec.get("role") == "device":
        from kernels.targets import cuda_runner
        return cuda_runner.serve(spec, lines, _say, _isolate, _arenas(spec))
    gpu = spec.get("timer") == "device"
    if gpu:
        from kernels.targets import cuda_runner
        cuda_runner.prepare_context(int(spec.get("gpu", 0)))
    _mem, slots = _views(spec)
    prepare = _prepare_probe if spec.get("role") == "probe" else _prepare_baseline
    # A trusted baseline (ours) is prepared first: torch.compile imports and writes its cache
    # lazily, from files the box user cannot read. A baseline that runs a user's own model is
    # prepared only after the drop: its module's ``warm(**options)`` loads what it needs first.
    user_code = bool(spec.get("user_code"))
    try:
        if user_code:
            warm = getattr(import_module(spec["fn"].partition(":")[0]), "warm", None)
            if warm is not None:
                warm(**spec.get("options", {}))
            isolation = _isolate(spec)
        calls = prepare(spec, slots)
        if not user_code:
            isolation = _isolate(spec)
    except Exception as exc:
        tail = traceback.format_exception_only(type(exc), exc)[-1].strip()
        _say(f"failed {json.dumps(tail[:500])}")
        return 0
    _say("info " + json.dumps({"blas": _blas_info()}))
    _say("ready " + " ".join(isolation))
    while True:
        line = lines.read()
        if line == "exit":
            os._exit(0)
        parts = line.split()
        if len(parts) < 5 or parts[0] != "call":
            os._exit(94)
        seq, ncalls = parts[1], int(parts[3])
        order = [int(t[1:]) for t in parts[5:]] or list(range(ncalls))
        _say(f"done {seq} {_timed_batch(calls, order, gpu)}")


if __name__ == "__main__":
    sys.exit(main())
