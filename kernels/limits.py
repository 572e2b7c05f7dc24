"""The largest problem this host takes: refused before any memory is touched.

Checking and timing a shape costs the evaluator memory for the inputs, the outputs, the
float64 reference and its float32 copy, and the arenas the sandbox processes share; and it
costs time in proportion to the work. A goal asking for more than the host can give is
refused with the sizes in the sentence, in the editor, the API and the CLI, instead of an
allocation that kills the worker for everyone. ``INT21_MAX_SHAPE_MB`` caps the memory (by
default half of this host's memory, at most 8 GiB); ``INT21_MAX_SHAPE_GFLOP`` the work.
"""
from __future__ import annotations

import math
import os

from kernels.spec import Shape, SpecError, Workload

DEFAULT_CAP_MB = 8192
DEFAULT_GFLOP = 4000.0      # ~10 s of a 2-core host's best at full speed, per call


def _host_mb() -> float:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    return 16384.0


def cap_mb() -> float:
    raw = os.environ.get("INT21_MAX_SHAPE_MB", "").strip()
    if raw:
        try:
            return float(raw)
        except ValueError:
            raise SpecError(f"INT21_MAX_SHAPE_MB={raw!r} is not a number") from None
    return min(DEFAULT_CAP_MB, _host_mb() / 2)


def cap_gflop() -> float:
    raw = os.environ.get("INT21_MAX_SHAPE_GFLOP", "").strip()
    try:
        return float(raw) if raw else DEFAULT_GFLOP
    except ValueError:
        raise SpecError(f"INT21_MAX_SHAPE_GFLOP={raw!r} is not a number") from None


def footprint_bytes(wl: Workload, shape: Shape) -> float:
    """What the evaluator holds for one shape: inputs (as drawn and as presented), outputs
    (the candidate's and each baseline's), the float64 reference and its float32 checks."""
    dims = shape.as_dict()
    ins = 0.0
    for a in wl.args:
        if a.kind == "in":
            ins += 4.0 * (math.prod(dims[d] for d in a.dims) if a.dims else 1)
    outs = sum(4.0 * math.prod(s) for s in wl.out_shapes(shape).values())
    if not any(a.dims for a in wl.args if a.kind == "in"):
        ins = max(ins, float(wl.bytes_moved(shape)) - outs)
    return 3 * ins + 9 * outs


def shape_problem(wl: Workload, shape: Shape) -> str | None:
    """Why this host cannot take ``shape`` (a sentence with the sizes), or None."""
    need_mb = footprint_bytes(wl, shape) / 2**20
    cap = cap_mb()
    if need_mb > cap:
        return (f"{shape} is too large for this host: checking and timing it needs about "
                f"{need_mb / 1024:,.1f} GiB of memory, and this host allows {cap / 1024:,.1f} GiB "
                "(INT21_MAX_SHAPE_MB)")
    gflop = float(wl.flops(shape)) / 1e9
    if gflop > cap_gflop():
        return (f"{shape} is too large for this host: one call is {gflop:,.0f} GFLOP, more than the "
                f"{cap_gflop():,.0f} GFLOP this host checks in its time limits (INT21_MAX_SHAPE_GFLOP)")
    return None


def largest_note(wl: Workload) -> str:
    """A sentence for the workload page: the size limit, in the workload's own terms."""
    return (f"this host takes shapes whose checks need up to {cap_mb() / 1024:,.1f} GiB of memory and "
            f"{cap_gflop():,.0f} GFLOP per call")
