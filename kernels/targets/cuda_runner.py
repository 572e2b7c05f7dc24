"""The host side of a GPU candidate's sandbox process (CUDA and PTX targets; GPU hosts only).

Trusted Python in the server process (``kernels.harness.server``, role "device"): it
makes the CUDA context, loads the candidate's cubin, and obeys the evaluator's calls like the
CPU runner does — the same protocol, the same calls, the same inputs and outputs arenas.
The candidate is device code only: it cannot reach this process's memory, so this host code
can time its launches with CUDA events on its own stream and check its device buffers:

- every input and output lives in a device buffer with NaN-pattern guard words on both
  sides; inputs are uploaded from the inputs arena before each call (the evaluator reorders
  them between calls), with a pristine copy kept to prove the kernel did not write them;
- outputs are poisoned on the device before the call and downloaded into the outputs arena
  after it, where the evaluator checks them;
- the reply is ``done <seq> <device seconds> <problems>``: problems are ``oob:<offset>``
  (an output's guard was written), ``input:<offset>`` (an input changed), ``ingrd:<offset>``
  (an input's guard) and ``launch:<threads>:<limit>``, or "-".

A CUDA error (illegal address, launch failure) ends the process with the error as the last
line of stderr: the context is unusable afterwards, and the evaluator reports a crash.
Importable without CuPy.
"""
from __future__ import annotations

import json
import os

import numpy as np

GUARD_BYTES = 4096                  # a multiple of 256: the body keeps CuPy's alignment
GUARD_WORD = 0x7FA5DEAD             # a NaN with a payload no kernel computes by accident
POISON_WORD = 0x7FC0BEEF            # quiet NaN for outputs


class DeviceBuffer:
    """A float32 device array with NaN-pattern guard words on both sides."""

    def __init__(self, cp, words: int):
        self.cp = cp
        gw = GUARD_BYTES // 4
        self.raw = cp.empty(2 * gw + words, dtype=cp.uint32)
        self.lo, self.body, self.hi = self.raw[:gw], self.raw[gw:gw + words], self.raw[gw + words:]
        self.lo.fill(GUARD_WORD)
        self.hi.fill(GUARD_WORD)

    @property
    def array(self):
        return self.body.view(self.cp.float32)

    def guards_intact(self) -> bool:
        cp = self.cp
        return bool(cp.all(self.lo == GUARD_WORD)) and bool(cp.all(self.hi == GUARD_WORD))


def prepare_context(device: int = 0) -> None:
    """Before the process drops to the box user: the driver opens /dev/nvidia* when the
    context is made, and those files may not be open to that user. Best effort."""
    try:
        import cupy as cp
        cp.cuda.Device(device).use()
        cp.cuda.runtime.free(0)
    except Exception:
        pass


def parse_call(tokens: list[str]) -> list[tuple[tuple, list]]:
    """``L<gx>,<gy>,<gz>,<bx>,<by>,<bz>,<shared>`` then the ABI's tokens, per call."""
    calls, current = [], None
    for t in tokens:
        if t.startswith("L"):
            current = (tuple(int(v) for v in t[1:].split(",")), [])
            calls.append(current)
        elif current is not None:
            current[1].append(t)
    return calls


class Device:
    """The candidate's device state across calls."""

    def __init__(self, cp, spec: dict, in_words, out_words):
        self.cp = cp
        self.fn = cp.RawModule(path=os.path.abspath(spec["artifact"])).get_function(spec.get("entry", "kernel"))
        self.in_words, self.out_words = in_words, out_words
        self.inputs: dict[int, tuple[DeviceBuffer, object]] = {}
        self.outputs: dict[int, DeviceBuffer] = {}
        self.stream = cp.cuda.Stream(non_blocking=True)

    def attributes(self) -> dict:
        out = {}
        for key in ("num_regs", "local_size_bytes", "shared_size_bytes", "const_size_bytes",
                    "max_threads_per_block", "max_dynamic_shared_size_bytes", "binary_version"):
            try:
                out[key] = int(getattr(self.fn, key))
            except Exception:
                pass
        return out

    def _input(self, offset: int, words: int) -> DeviceBuffer:
        cp = self.cp
        if offset not in self.inputs:
            self.inputs[offset] = (DeviceBuffer(cp, words), cp.empty(words, dtype=cp.uint32))
        buf, pristine = self.inputs[offset]
        host = self.in_words[offset // 4: offset // 4 + words]
        pristine.set(host)
        buf.body[...] = pristine
        return buf

    def _output(self, offset: int, words: int) -> DeviceBuffer:
        if offset not in self.outputs:
            self.outputs[offset] = DeviceBuffer(self.cp, words)
        buf = self.outputs[offset]
        buf.body.fill(POISON_WORD)
        return buf

    def call(self, calls: list, perturb: int) -> tuple[float, list[str]]:
        cp = self.cp
        launches, used_in, used_out, problems = [], [], [], []
        limit = int(self.fn.max_threads_per_block)
        for (gx, gy, gz, bx, by, bz, shared), tokens in calls:
            values = []
            for t in tokens:
                kind, rest = t[0], t[1:]
                if kind in "io":
                    off, words = (int(v, 16) for v in rest.split(":"))
                    buf = self._input(off, words) if kind == "i" else self._output(off, words)
                    (used_in if kind == "i" else used_out).append((off, words, buf))
                    values.append(buf.array)
                elif kind == "d":
                    values.append(np.int64(int(rest)))
                else:
                    values.append(np.uint32(int(rest, 16)).view(np.float32))
            threads = bx * by * bz
            if threads > limit or min(gx, gy, gz, bx, by, bz) < 1:
                problems.append(f"launch:{threads}:{limit}")
                continue
            if shared > int(self.fn.max_dynamic_shared_size_bytes):
                self.fn.max_dynamic_shared_size_bytes = shared   # opt in above 48 KiB
            launches.append(((gx, gy, gz), (bx, by, bz), tuple(values), shared))
        if problems:
            return 0.0, problems
        with self.stream:
            start, end = cp.cuda.Event(), cp.cuda.Event()
            start.record(self.stream)
            for grid, block, values, shared in launches:
                self.fn(grid, block, values, shared_mem=shared)
            end.record(self.stream)
            end.synchronize()
            seconds = float(cp.cuda.get_elapsed_time(start, end)) / 1e3
            for off, words, buf in used_in:
                if not bool(cp.array_equal(buf.body, self.inputs[off][1])):
                    problems.append(f"input:{off:x}")
                if not buf.guards_intact():
                    problems.append(f"ingrd:{off:x}")
            for off, words, buf in used_out:
                if not buf.guards_intact():
                    problems.append(f"oob:{off:x}")
                self.out_words[off // 4: off // 4 + words] = cp.asnumpy(buf.body)
        return seconds, problems


def serve(spec: dict, lines, say, isolate, views) -> int:
    """The device candidate's loop (called by ``kernels.harness.server.main``)."""
    import cupy as cp
    prepare_context(int(spec.get("gpu", 0)))
    in_words, out_words = views
    isolation = isolate(spec)
    dev = Device(cp, spec, in_words, out_words)
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    name = props.get("name", b"")
    say("info " + json.dumps({"gpu": name.decode() if isinstance(name, bytes) else str(name),
                              "sm": f"sm_{props.get('major')}{props.get('minor')}", "kernel": dev.attributes()}))
    say("ready " + " ".join(isolation))
    while True:
        line = lines.read()
        if line == "exit":
            return 0
        parts = line.split()
        if len(parts) < 5 or parts[0] != "call":
            return 94
        seconds, problems = dev.call(parse_call(parts[5:]), int(parts[2]))
        say(f"done {parts[1]} {seconds!r} {','.join(problems) or '-'}")
