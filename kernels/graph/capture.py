"""Capturing a user's problem file: the trusted side.

:func:`capture` writes the (override-rewritten) source into a private folder, runs
:mod:`kernels.graph.capture_child` there through ``sandbox.run_process`` (fresh interpreter,
minimal environment, new session, watchdog; the child isolates itself and installs the
``capture`` seccomp profile before it runs any user code), then reads back DATA only: a
bounded, length-prefixed JSON header and raw float32 bytes. The header is checked field by
field (names, shapes, offsets, sizes) before anything is built from it, and the graph goes
through the trusted opset table (:mod:`kernels.graph.aten`) into our IR.

Whatever the problem does, the answer is a value: :class:`Captured`, or a
:class:`CaptureFailure` whose ``kind`` and ``reason`` say what happened (``syntax``,
``format``, ``user_code``, ``unsupported``, ``dynamic``, ``dtype``, ``timeout``, ``memory``,
``forbidden``, ``crashed``, ``export``, ``too_large``, ``protocol``, ``mismatch``).
"""
from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import struct
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kernels.graph import problem as problem_text
from kernels.graph.ir import Graph
from kernels.harness import sandbox

MAX_HEADER_BYTES = 64 << 20
INIT_SEED = 42          # torch.manual_seed before Model(*get_init_inputs()): baselines rebuild the same weights
MAX_NODES = 50_000
NODE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,199}$")


@dataclass(frozen=True)
class CaptureLimits:
    wall_seconds: float = 180.0
    cpu_seconds: int = 600
    memory_mb: int = 6144      # address space on top of what torch maps after its warm-up
    result_mb: int = 1024      # the most the child may write back (weights + samples)
    launcher: str = "server"   # "server": forked from the warmed-up capture server; "spawn": a fresh interpreter


@dataclass
class CaptureFailure:
    """Why a problem could not be imported. ``node``/``op`` name the graph node and target
    when one is at fault; ``line`` the problem file's line when the user's code raised."""

    kind: str
    reason: str
    node: str = ""
    op: str = ""
    line: int | None = None
    details: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"kind": self.kind, "reason": self.reason, "node": self.node, "op": self.op, "line": self.line}


@dataclass
class Sample:
    """One seeded call of ``get_inputs()`` and what the user's model returned for it."""

    seed: int
    inputs: dict          # graph input name -> float32 array
    outputs: list         # float32 arrays, in the graph's output order


@dataclass
class Captured:
    graph: Graph
    params: dict          # param name -> float32 array
    samples: list
    survey: list          # every captured call: {"node", "target", "supported"}
    isolation: list
    seconds: float
    torch: str = ""
    call: list = field(default_factory=list)   # get_inputs() entries: {"input": name} or {"scalar": v}


@dataclass
class RawCapture:
    header: dict
    blob: bytes
    isolation: list
    seconds: float


def capture(source: str, *, overrides: dict | None = None, seeds=(0, 1),
            limits: CaptureLimits | None = None) -> Captured | CaptureFailure:
    """Run the problem in the sandbox and translate what it returns; never raises for
    anything the problem file does."""
    raw = run_child(source, overrides=overrides, seeds=seeds, limits=limits)
    if isinstance(raw, CaptureFailure):
        return raw
    return from_raw(raw)


def from_raw(raw: RawCapture) -> Captured | CaptureFailure:
    from kernels.graph import aten
    from kernels.graph.capture_child import WIRE
    from kernels.graph.translate import Unsupported
    try:
        records = _records(raw.header)
        weights = {name: _array(raw.blob, rec, WIRE) for name, rec in _dict(raw.header, "weights").items()
                   if isinstance(rec, dict) and "offset" in rec}
    except _Bad as exc:
        return CaptureFailure("protocol", f"the capture child returned malformed data: {exc}")
    survey = [{"node": r["name"], "target": r["target"],
               "supported": r["target"] in aten.HANDLERS or r["target"] in ("<built-in function getitem>",),
               **({} if r["target"] in aten.HANDLERS or "getitem" in r["target"]
                  else {"why": aten.why_unsupported(r["target"])})}
              for r in records["nodes"] if r["op"] == "call_function"]
    try:
        graph, params = aten.translate(records, weights)
    except Unsupported as exc:
        return CaptureFailure(exc.kind, exc.reason, node=exc.node, op=exc.op, details={"survey": survey})
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        return CaptureFailure("protocol", f"the captured graph could not be read: {type(exc).__name__}: {exc}",
                              details={"survey": survey})
    try:
        samples_raw = _samples(raw.header, raw.blob)
    except _Dtype as exc:
        return CaptureFailure("dtype", str(exc))
    except _Bad as exc:
        return CaptureFailure("protocol", f"the capture child returned malformed data: {exc}")
    samples = []
    call = []
    names = iter(t.name for t in graph.inputs)
    for a in samples_raw[0][1][0]:
        call.append({"scalar": a[1]} if isinstance(a, tuple) else {"input": next(names, None)})
    for seed, (ins, outs) in samples_raw:
        tensors = [a for a in ins if isinstance(a, np.ndarray)]
        if len(tensors) != len(graph.inputs) or len(outs) != len(graph.outputs):
            return CaptureFailure("protocol", f"a sample has {len(tensors)} inputs and {len(outs)} outputs; the "
                                  f"graph has {len(graph.inputs)} and {len(graph.outputs)}")
        for t, arr in zip(graph.inputs, tensors):
            if arr.shape != t.shape:
                return CaptureFailure("dynamic", f"get_inputs() gave input {t.name} the shape {list(arr.shape)} "
                                      f"under seed {seed} but {list(t.shape)} when exported: shapes must not vary")
        for i, (name, arr) in enumerate(zip(graph.outputs, outs)):
            if arr.shape != graph.shape_of(name):
                return CaptureFailure("protocol", f"the model's output {i} has shape {list(arr.shape)}, the graph "
                                      f"says {list(graph.shape_of(name))}")
        samples.append(Sample(seed, {t.name: a for t, a in zip(graph.inputs, tensors)}, outs))
    return Captured(graph, params, samples, survey, raw.isolation, raw.seconds, str(raw.header.get("torch", ""))[:40],
                    call)


def run_child(source: str, *, overrides: dict | None = None, seeds=(0, 1),
              limits: CaptureLimits | None = None) -> RawCapture | CaptureFailure:
    limits = limits or CaptureLimits()
    try:
        text = problem_text.with_overrides(source, overrides)
    except problem_text.ProblemError as exc:
        kind = "syntax" if str(exc).startswith("syntax error") else "format"
        line = None
        m = re.match(r"syntax error on line (\d+)", str(exc))
        if m:
            line = int(m.group(1))
        return CaptureFailure(kind, str(exc), line=line)
    workdir = Path(tempfile.mkdtemp(prefix="int21-capture-"))
    try:
        (workdir / "problem.py").write_text(text, encoding="utf-8")
        request = {"seeds": [int(s) for s in seeds], "init_seed": INIT_SEED,
                   "limits": {"cpu_seconds": limits.cpu_seconds, "memory_mb": limits.memory_mb,
                              "result_mb": limits.result_mb}}
        (workdir / "request.json").write_text(json.dumps(request))
        if os.geteuid() == 0:
            os.chmod(workdir, 0o700)   # only root (the child, before it drops) reads it
        run = None
        if limits.launcher == "server":
            from kernels.graph import capture_server
            try:
                run = capture_server.Client.for_this_thread().run(str(workdir), limits.wall_seconds)
            except capture_server.ServerError:
                run = None   # same isolation from a fresh interpreter, only slower
        if run is None:
            run = sandbox.run_process(
                [sys.executable, "-s", "-B", "-m", "kernels.graph.capture_child", str(workdir)], cwd=workdir,
                limits=sandbox.Limits(wall_seconds=limits.wall_seconds, cpu_seconds=limits.cpu_seconds),
                protocol=True)
        return _outcome(run, workdir, limits)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _outcome(run: sandbox.ProcessResult, workdir: Path, limits: CaptureLimits) -> RawCapture | CaptureFailure:
    records = [r for r in run.records if isinstance(r, dict)]
    hello = next((r for r in records if r.get("kind") == "hello"), {})
    isolation = [str(x)[:60] for x in hello.get("isolation", [])][:10] if isinstance(hello.get("isolation"), list) else []
    phase = next((str(r.get("phase"))[:20] for r in reversed(records) if r.get("kind") == "phase"), "start")
    where = {"prepare": "while torch was loading", "import": "while importing the problem file",
             "build": "while building the model", "export": "while exporting the model",
             "run": "while running the model"}.get(phase, "")
    details = {"stderr_tail": run.stderr[-2000:], "stdout_tail": run.stdout[-1000:], "isolation": isolation,
               "phase": phase, "exit": run.describe_exit(), "seconds": round(run.seconds, 2)}
    failure = next((r for r in records if r.get("kind") == "failure"), None)
    if run.timed_out:
        return CaptureFailure("timeout", f"the problem ran past the {limits.wall_seconds:g} s limit {where} "
                                         "and was stopped", details=details)
    if failure is not None:
        line = failure.get("line") if isinstance(failure.get("line"), int) else None
        return CaptureFailure(str(failure.get("failure", "user_code"))[:20], str(failure.get("reason", ""))[:2000],
                              line=line, details=details)
    if run.signal == signal.SIGSYS:
        return CaptureFailure("forbidden", f"the problem made a system call the capture sandbox forbids {where} "
                                           "(opening files, sockets, starting processes…) and was stopped",
                              details=details)
    if run.signal == signal.SIGXCPU:
        return CaptureFailure("timeout", f"the problem used more than {limits.cpu_seconds} CPU-seconds {where}",
                              details=details)
    if "MemoryError" in run.stderr or "Cannot allocate memory" in run.stderr or "std::bad_alloc" in run.stderr:
        return CaptureFailure("memory", f"the problem exhausted its memory limit ({limits.memory_mb} MB) {where}",
                              details=details)
    if not any(r.get("kind") == "done" for r in records):
        tail = run.stderr.strip().splitlines()[-1:] if run.stderr.strip() else []
        return CaptureFailure("crashed", f"the capture child {run.describe_exit()} {where}"
                              + (f": {tail[0][:300]}" if tail else ""), details=details)
    path = workdir / "result.bin"
    try:
        size = path.stat().st_size
        if size > (limits.result_mb << 20) + MAX_HEADER_BYTES:
            return CaptureFailure("too_large", "the capture result is larger than its limit", details=details)
        data = path.read_bytes()
        (n,) = struct.unpack_from("<Q", data, 0)
        if n > MAX_HEADER_BYTES or 8 + n > len(data):
            raise ValueError("header length out of range")
        header = json.loads(data[8:8 + n].decode("utf-8"))
        if not isinstance(header, dict):
            raise ValueError("header is not an object")
    except (OSError, ValueError, struct.error, RecursionError, UnicodeDecodeError) as exc:
        return CaptureFailure("protocol", f"the capture child's result could not be read: {exc}", details=details)
    return RawCapture(header, data[8 + n:], isolation, run.seconds)


# --------------------------------------------------------------------------- strict parsing

class _Bad(ValueError):
    pass


class _Dtype(ValueError):
    pass


def _dict(d, key) -> dict:
    v = d.get(key)
    if not isinstance(v, dict):
        raise _Bad(f"{key} must be an object")
    return v


def _records(header: dict) -> dict:
    graph = _dict(header, "graph")
    nodes = graph.get("nodes")
    if not isinstance(nodes, list) or not nodes or len(nodes) > MAX_NODES:
        raise _Bad(f"the graph must have 1..{MAX_NODES} nodes")
    seen = set()
    for rec in nodes:
        if not isinstance(rec, dict):
            raise _Bad("a node record is not an object")
        name, op = rec.get("name"), rec.get("op")
        if not isinstance(name, str) or not NODE_NAME.match(name) or name in seen:
            raise _Bad(f"node name {str(name)[:40]!r} is invalid or repeated")
        seen.add(name)
        if op not in ("placeholder", "call_function", "output", "get_attr", "call_module", "call_method"):
            raise _Bad(f"node {name}: unknown op {str(op)[:30]!r}")
        target = rec.get("target")
        if op == "call_function" and (not isinstance(target, str) or len(target) > 200):
            raise _Bad(f"node {name}: target must be a short string")
        if not isinstance(rec.get("args", []), list) or not isinstance(rec.get("kwargs", {}), dict):
            raise _Bad(f"node {name}: args/kwargs malformed")
        rec.setdefault("args", [])
        rec.setdefault("kwargs", {})
    kinds = graph.get("output_kinds", [])
    if not isinstance(kinds, list) or not all(isinstance(k, str) for k in kinds):
        raise _Bad("output_kinds malformed")
    return graph


def _array(blob: bytes, rec: dict, wire: dict | None = None) -> np.ndarray:
    """One array of the child's blob: float32 (samples), or any type of ``wire`` (weights)."""
    shape, off, nbytes = rec.get("shape"), rec.get("offset"), rec.get("nbytes")
    kind = (wire or {"torch.float32": "<f4"}).get(rec.get("dtype"))   # weights: the child's WIRE
    if kind is None:
        raise _Bad("only float32 arrays (and bool/integer weights) carry data")
    if not isinstance(shape, list) or len(shape) > 8 or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise _Bad(f"array shape {str(shape)[:60]} is invalid")
    count = math.prod(shape)
    size = np.dtype(kind).itemsize
    if not (isinstance(off, int) and isinstance(nbytes, int) and off >= 0 and nbytes == size * count
            and off + nbytes <= len(blob)):
        raise _Bad("array bytes are out of range")
    arr = np.frombuffer(blob, dtype=kind, count=count, offset=off).reshape(shape)
    if kind == "|b1" and not np.isin(arr.view(np.uint8), (0, 1)).all():
        raise _Bad("a bool array holds bytes other than 0 and 1")
    return arr.astype(np.float32 if kind == "<f4" else arr.dtype.newbyteorder("="))


def _samples(header: dict, blob: bytes) -> list:
    runs = header.get("samples")
    if not isinstance(runs, list) or not runs or len(runs) > 16:
        raise _Bad("samples must be a list of 1..16 runs")
    out = []
    for i, run in enumerate(runs):
        if not isinstance(run, dict) or not isinstance(run.get("inputs"), list) or not isinstance(run.get("outputs"), list):
            raise _Bad("a sample is malformed")
        ins = []
        for rec in run["inputs"]:
            if isinstance(rec, dict) and "scalar" in rec:
                v = rec["scalar"]
                v = float(v["float"]) if isinstance(v, dict) and "float" in v else v
                if not isinstance(v, (int, float, bool)) and v is not None:
                    raise _Bad("a scalar input is not a number")
                ins.append(("scalar", v))
            elif isinstance(rec, dict):
                if rec.get("dtype") != "torch.float32":
                    raise _Bad(f"a sample input is {str(rec.get('dtype'))[:30]}")
                ins.append(_array(blob, rec))
            else:
                raise _Bad("a sample input is malformed")
        outs = []
        for rec in run["outputs"]:
            if not isinstance(rec, dict) or rec.get("dtype") != "torch.float32":
                dtype = rec.get("dtype") if isinstance(rec, dict) else "?"
                raise _Dtype(f"the model's output {len(outs)} is {str(dtype)[:30]}; outputs must be float32")
            outs.append(_array(blob, rec))
        seed = run.get("seed", i)
        out.append((seed if isinstance(seed, int) else i, (ins, outs)))
    return out
