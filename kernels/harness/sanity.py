"""The sanity stage: is a timing physically possible, and did the kernel use what it declared?

A time that implies more bandwidth than the memory system has, or more FLOP/s than the cores
can do, is not fast, it is broken or cheating; so is a speedup above 10x a strong baseline,
and a kernel that used more CPU time per second of its calls than the threads it declares
(or than the host has cores) was helped by threads it did not declare. Each finding is a
:class:`Flag`; the evaluator re-times in a fresh process before anyone sees a win.
"""
from __future__ import annotations

from dataclasses import dataclass

import os

from kernels.harness.timing import speedups

SUSPICIOUS_SPEEDUP = 10.0   # over a strong baseline: re-checked in a fresh process
PHYSICS_MARGIN_BW = 2.0     # × the measured STREAM ceiling (non-temporal stores beat plain copy)
PHYSICS_MARGIN_FLOPS = 1.1  # × the measured FMA peak


@dataclass(frozen=True)
class Flag:
    kind: str    # "ceiling" | "threads" | "speedup"
    text: str


def ceilings(tgt, refresh: bool = False) -> dict:
    try:
        return tgt.ceilings(refresh=refresh)
    except Exception as exc:  # a missing ceiling disables the physics check, visibly
        return {"error": f"could not measure this host's ceilings: {exc}"}


def flags(wl, tgt, shape, bench, ceil: dict, threads: int | None) -> list[Flag]:
    out = []
    t = bench["timings"]
    med = t["candidate"]["median_ms"] / 1e3
    llc = tgt.fingerprint().get("llc_bytes") or 0
    bw = wl.bytes_moved(shape) / med / 1e9
    bw_ceiling = max(ceil.get("copy_gbs", 0), ceil.get("triad_gbs", 0))
    if bw_ceiling and wl.bytes_moved(shape) > 2 * llc and bw > PHYSICS_MARGIN_BW * bw_ceiling:
        out.append(Flag("ceiling", f"implies {bw:.0f} GB/s, above {PHYSICS_MARGIN_BW:g}x the measured bandwidth "
                                   f"ceiling ({bw_ceiling:.0f} GB/s)"))
    gflops = wl.flops(shape) / med / 1e9
    peak = ceil.get("peak_gflops", 0)
    if peak and gflops > PHYSICS_MARGIN_FLOPS * peak:
        out.append(Flag("ceiling", f"implies {gflops:.0f} GFLOP/s, above the measured compute ceiling "
                                   f"({peak:.0f} GFLOP/s)"))
    cpu = bench["details"].get("cpu", {})
    ratio, busy = cpu.get("cpu_per_wall"), cpu.get("busy_threads")
    cores = os.cpu_count() or 1
    if tgt.timer == "wall" and isinstance(threads, int) and isinstance(busy, int) and busy > threads:
        out.append(Flag("threads", f"{busy} of its threads each did a share of the work of its calls while it "
                                   f"declares {threads} thread{'s' if threads != 1 else ''}: more threads than it "
                                   "declares"))
    elif ratio and tgt.timer == "wall":      # the candidate ran on this host's cores
        if isinstance(threads, int) and ratio > threads * 1.25 + 0.35:
            out.append(Flag("threads", f"used {ratio:.2f} CPU-seconds per second of its calls while it declares "
                                       f"{threads} thread{'s' if threads != 1 else ''}: more threads than it "
                                       "declares"))
        elif ratio > cores * 1.1 + 0.35:
            out.append(Flag("threads", f"used {ratio:.2f} CPU-seconds per second of its calls on a host with "
                                       f"{cores} cores: more than the host can give one process"))
    strong = {b.name for bl in wl.baselines.values() for b in bl if b.strong}
    for name, r in speedups(t).items():
        if name in strong and r > SUSPICIOUS_SPEEDUP:
            out.append(Flag("speedup", f"{r:.1f}x faster than {name}, a strong baseline"))
    return out


def verdict(lasting: list[Flag]) -> str:
    """The reason for a suspicious outcome: what happened, in words."""
    first = lasting[0]
    if first.kind == "threads":
        return f"It used more threads than it declares, in two sessions: {first.text}."
    return f"Physically implausible, twice: {first.text}."


def roofline(wl, shape, bench, ceil) -> dict:
    med = bench["timings"]["candidate"]["median_ms"] / 1e3
    out = {"achieved_gbs": wl.bytes_moved(shape) / med / 1e9, "achieved_gflops": wl.flops(shape) / med / 1e9}
    probe = bench["details"].get("copy_probe")
    if probe and probe.get("gbs"):
        # the same session's streaming copy, timed interleaved with the candidate
        out["session_copy_gbs"] = probe["gbs"]
        out["pct_of_session_copy"] = 100 * out["achieved_gbs"] / probe["gbs"]
    if ceil.get("copy_gbs"):
        out["pct_of_copy_bandwidth"] = 100 * out["achieved_gbs"] / ceil["copy_gbs"]
    if ceil.get("peak_gflops"):
        out["pct_of_peak_flops"] = 100 * out["achieved_gflops"] / ceil["peak_gflops"]
    return out
