"""The evaluator's data, built in a memory-limited child: never in the evaluator's own process.

Drawing a shape's inputs and computing its float64 reference take memory the evaluator
cannot promise in advance: ``kernels.limits`` refuses what is plainly too large, but an
imported problem's interpreter holds intermediates no footprint sees, and a goal's shapes
add up. So each build runs in a child forked for it (it inherits the workload as it is,
an in-memory one included), under a data-segment limit (``RLIMIT_DATA``: the private
writable memory it may add, NumPy's arrays; an address-space limit would also count the
untouched reservations of BLAS threads and malloc arenas, several per core) and a
wall-clock limit. The arrays come back through a memfd the evaluator created before the
fork and maps read-only once the child has exited. A child that runs out of memory, is
killed, or runs past its time is a :class:`BuildError` with the reason; the evaluator's
process, and the worker it runs in, are untouched.

The limit: four times the shape's footprint (:func:`kernels.limits.footprint_bytes`) plus
:data:`HEADROOM`, at most ``INT21_BUILD_MB`` (default: the shape cap, ``INT21_MAX_SHAPE_MB``,
plus the headroom). An operator's setting, never a goal's: there is no value that lifts it.
Its cost, measured on this 2-core VM under load (2026-12-02): a fork ~4 ms; softmax
4096x4096's inputs and float64 reference (192 MiB) take 1.24 s through the child against
0.84 s in process (the copy into the memfd), once per process, since ``cases`` caches what
comes back; an evaluation after the first forks only for the slices it checks (8-10
children, 0.1-0.26 s of a 2.6-5.5 s untimed softmax 4096x4096 evaluation).
"""
from __future__ import annotations

import json
import math
import mmap
import os
import resource
import select
import signal
import time
from typing import Callable

import numpy as np

from kernels import limits
from kernels.spec import SpecError

HEADROOM = 256 << 20          # the child's own small allocations: NumPy temporaries, BLAS buffers
FACTOR = 4                    # of the footprint: intermediates of a reference (an interpreter's)
DEFAULT_SECONDS = 600.0
ALIGN = 64


class BuildError(RuntimeError):
    """The child could not build the data: ``kind`` is memory, timeout or killed; the
    message is the sentence to show (what, the limit, what to change)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def _env_number(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SpecError(f"{name}={raw!r} is not a number") from None
    if not (value > 0 and math.isfinite(value)):
        raise SpecError(f"{name}={raw!r} must be a positive number")
    return value


def cap_bytes() -> int:
    return int(_env_number("INT21_BUILD_MB", limits.cap_mb() + HEADROOM / 2**20) * 2**20)


def seconds() -> float:
    return _env_number("INT21_BUILD_SECONDS", DEFAULT_SECONDS)


def budget_for(footprint: float) -> int:
    """The child's limit for data whose shapes' footprints add up to ``footprint`` bytes."""
    return int(min(cap_bytes(), FACTOR * footprint + HEADROOM))


def in_child(fn: Callable[[], dict], *, budget: int, what: str, timeout: float | None = None) -> dict:
    """``fn()`` in a forked child under ``budget`` bytes of new private memory; its dict of
    NumPy arrays (read-only here, in one shared mapping) and numbers, as it returned them.
    Raises BuildError (memory, timeout, killed); an exception of ``fn`` is raised again here
    as a ValueError (a ValueError there, SpecError included) or a RuntimeError, with its text."""
    timeout = seconds() if timeout is None else timeout
    fd = os.memfd_create("int21-build", os.MFD_CLOEXEC)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:     # the child: never returns
        _child(fn, budget, fd, r, w)
    os.close(w)
    try:
        raw, status = _collect(pid, r, timeout, what)
        pid = 0
        msg = json.loads(raw) if raw else None
        if msg is None or not msg.get("ok"):
            _raise(msg, status, budget, what)
        return _unpack(fd, msg)
    finally:
        if pid:
            _kill(pid)
        os.close(r)
        os.close(fd)


def _child(fn, budget: int, fd: int, r: int, w: int) -> None:
    code = 1
    try:
        os.close(r)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        cap = _vm_data() + budget
        resource.setrlimit(resource.RLIMIT_DATA, (cap, cap))
        try:
            msg = {"ok": True, **_pack(fd, fn())}
            code = 0
        except MemoryError as exc:
            msg = {"ok": False, "kind": "memory", "text": str(exc)[:300]}
        except BaseException as exc:   # the workload's own failure: said as it is
            msg = {"ok": False, "kind": "ValueError" if isinstance(exc, ValueError) else "error",
                   "text": f"{type(exc).__name__}: {exc}"[:2000]}
        data = json.dumps(msg).encode()
        while data:
            data = data[os.write(w, data):]
    finally:
        os._exit(code)


def _vm_data() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmData:"):
                return int(line.split()[1]) * 1024
    return 0


def _pack(fd: int, out: dict) -> dict:
    arrays, numbers, offset = {}, {}, 0
    for name, value in out.items():
        if isinstance(value, np.ndarray):
            arrays[name] = (offset, value)
            offset += -(-value.nbytes // ALIGN) * ALIGN
        else:
            numbers[name] = float(value)
    layout = {}
    if offset:
        os.ftruncate(fd, offset)
        mem = mmap.mmap(fd, offset, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        for name, (at, arr) in arrays.items():
            dst = np.frombuffer(mem, dtype=arr.dtype, count=arr.size, offset=at).reshape(arr.shape)
            np.copyto(dst, arr)
            layout[name] = [at, arr.dtype.str, list(arr.shape)]
    else:
        layout = {name: [0, arr.dtype.str, list(arr.shape)] for name, (_, arr) in arrays.items()}
    return {"arrays": layout, "numbers": numbers}


def _unpack(fd: int, msg: dict) -> dict:
    size = os.fstat(fd).st_size
    mem = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ) if size else None
    out: dict = {}
    for name, (at, dtype, shape) in msg["arrays"].items():
        n = math.prod(shape)
        if mem is None or n == 0:
            arr = np.zeros(shape, dtype=np.dtype(dtype))
            arr.flags.writeable = False
        else:
            arr = np.frombuffer(mem, dtype=np.dtype(dtype), count=n, offset=at).reshape(shape)
        out[name] = arr
    out.update(msg["numbers"])
    return out


def _collect(pid: int, r: int, timeout: float, what: str) -> tuple[bytes, int]:
    deadline = time.monotonic() + timeout
    chunks = []
    while True:
        left = deadline - time.monotonic()
        ready = select.select([r], [], [], max(0.0, left))[0] if left > 0 else []
        if not ready:
            _kill(pid)
            raise BuildError("timeout", f"building {what} ran past {timeout:.0f} s (INT21_BUILD_SECONDS); "
                                        "the child was killed")
        chunk = os.read(r, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    return b"".join(chunks), status


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


def _raise(msg: dict | None, status: int, budget: int, what: str):
    limit = f"{budget / 2**30:,.2f} GiB" if budget >= 2**30 else f"{budget / 2**20:,.0f} MiB"
    if msg is None:
        sig = -os.waitstatus_to_exitcode(status)
        cause = " (the host's out-of-memory killer, or the operator)" if sig == signal.SIGKILL else ""
        raise BuildError("killed", f"the child building {what} was killed by signal {sig}{cause}")
    if msg["kind"] == "memory":
        raise BuildError("memory", f"building {what} needs more memory than the {limit} its child may use "
                                   "(4x the shape's footprint plus headroom, at most INT21_BUILD_MB)")
    if msg["kind"] == "ValueError":
        raise ValueError(msg["text"])
    raise RuntimeError(f"building {what} failed: {msg['text']}")
