"""Turning what a sandbox process did into a verdict: a status and a sentence.

Every reply is judged here, never trusted: a fault is located in the evaluator's own map of
the buffers, a process that died is described from its exit status, a line that is not the
protocol's next one is the candidate's doing (``suspicious``), and after every call the
runner's report of the floating-point environment and OpenMP state is held against what it
said before the candidate first ran.
"""
from __future__ import annotations

import signal

from kernels.harness.process import Reply, RunnerProcess

_MXCSR_BITS = {15: "flush-to-zero", 6: "denormals-are-zero"}
CONTROL_BITS = 0xFFC0
_ROUNDING = {0: "round to nearest", 1: "round down", 2: "round up", 3: "round toward zero"}


def describe_mxcsr(value: int) -> str:
    words = [name for bit, name in _MXCSR_BITS.items() if value & (1 << bit)]
    words.append(_ROUNDING[(value >> 13) & 3])
    if (value >> 7) & 0x3F != 0x3F:
        words.append(f"exceptions unmasked ({(value >> 7) & 0x3F:#04x})")
    return ", ".join(words)


def reply_problem(reply: Reply, proc, *, when: str, where: str, inputs=None, outputs=None) -> tuple[str, str] | None:
    """(status, reason) for a reply that is not a clean "done", else None."""
    if reply.kind == "done":
        return None
    if reply.kind == "timeout":
        limit = getattr(proc, "limit_s", None)
        span = f"{limit:.0f} s " if limit else ""
        return "timeout", f"The kernel ran past the {span}limit {when}{where} and was killed."
    if reply.kind == "unexpected":
        shown = reply.text.strip()[:120] or "(an empty line)"
        return "suspicious", (f"Something other than the harness wrote to its protocol channel {when}{where} "
                              f"({shown!r}): the kernel tampered with the evaluation.")
    if reply.kind == "fault" and isinstance(proc, RunnerProcess):
        located = _locate_fault(reply, proc, inputs, outputs)
        if located:
            return "wrong", f"The kernel faulted {when}{where}: {located} (the write hit read-only memory)."
    # died (or a fault outside every buffer): describe how
    if hasattr(proc, "reap_if_dead"):
        proc.reap_if_dead()
    exit_ = proc.dead
    how = exit_.describe() if exit_ else "died"
    tail = (exit_.stderr.strip().splitlines()[-1:] if exit_ and exit_.stderr.strip() else [])
    extra = f": {tail[0][:200]}" if tail else ""
    if exit_ is not None:
        code = exit_.returncode
        sig = exit_.signal or (code - 128 if code is not None and code > 128 else None)
        if sig == signal.SIGSYS:
            extra = " (it made a system call the sandbox forbids: opening files, starting processes, sockets…)"
        elif reply.kind == "fault":
            try:
                extra = f" ({signal.Signals(int(reply.fields[0])).name} at {reply.fields[1]})"
            except (ValueError, IndexError):
                pass
    stderr = (exit_.stderr if exit_ else "") or ""
    if "Cannot allocate memory" in stderr or "MemoryError" in stderr:
        extra = " after exhausting its memory limit" + extra
    return "crashed", f"The sandbox child {how} {when}{where}{extra}."


def _locate_fault(reply: Reply, proc: RunnerProcess, inputs, outputs) -> str | None:
    try:
        addr = int(reply.fields[1], 16)
    except (ValueError, IndexError):
        return None
    in_base, out_base = proc.bases
    for arena, base, kind in ((inputs, in_base, "input"), (outputs, out_base, "output")):
        if arena is None or not (base <= addr < base + arena.size):
            continue
        hit = arena.locate(addr - base)
        if hit is None:
            return f"it wrote outside every {kind} buffer"
        name, part = hit
        name = name.split(":", 1)[-1]
        if kind == "input":
            return f"input {name} was modified" if part == "body" else f"memory around input {name} was written"
        return f"memory around output {name} was written (out of bounds)"
    return None


def state_problems(reply: Reply, proc: RunnerProcess, *, threads_declared: int | None) -> list[str]:
    """What the kernel left changed for its caller, from the runner's report after the call."""
    problems = []
    try:
        mxcsr, omp_threads, level, in_parallel = (reply.fields[1], reply.fields[2], reply.fields[3],
                                                  reply.fields[4])
    except IndexError:
        return ["the runner's report after the call is incomplete"]
    if proc.mxcsr is not None:
        # The low six bits are sticky exception flags every computation sets; the control bits
        # (exception masks, rounding, flush-to-zero, denormals-are-zero) are the caller's.
        try:
            before, after = int(proc.mxcsr, 16), int(mxcsr, 16)
        except ValueError:
            before, after = -1, -2
        if (before & CONTROL_BITS) != (after & CONTROL_BITS):
            what = (f"{describe_mxcsr(before)} → {describe_mxcsr(after)}" if after >= 0
                    else f"{proc.mxcsr} → {mxcsr}")
            problems.append(f"it left the floating-point environment changed for its caller (MXCSR {what})")
    if proc.omp_threads is not None and omp_threads != proc.omp_threads:
        problems.append(f"it changed its caller's OpenMP thread count ({proc.omp_threads} → {omp_threads})")
    if level != "0" or in_parallel != "0":
        problems.append("it returned from inside an OpenMP parallel region (its threads were left running)")
    return problems
