"""The capture child: runs a user's problem file and exports it, inside the sandbox.

Started by :func:`kernels.graph.capture.capture` through ``sandbox.run_process`` (fresh
interpreter, minimal environment, new session, watchdog) as
``python -m kernels.graph.capture_child WORKDIR``. Order matters:

1. read the request and the (already override-rewritten) source into memory, open the one
   file it may write (``result.bin``), import torch and warm up everything ``torch.export``
   and ``run_decompositions`` need — while files may still be opened;
2. isolate: no_new_privs, a network namespace of its own and uid/gid 65534 when root,
   rlimits (address space, CPU, file size = the result cap, no core), new imports refused,
   source lookups served from memory, and the ``capture`` seccomp profile (opening files,
   sockets, exec and fork kill the process);
3. only then ``exec`` the user's code, build ``Model(*get_init_inputs()).eval()``, call
   ``get_inputs()`` under fixed seeds, export, decompose to core ATen, run the model itself.

It writes DATA only: a length-prefixed JSON header plus raw little-endian bytes (float32, and
bool/int32/int64 buffers) in ``result.bin`` (graph records, weights, the seeded inputs and the
model's own outputs), and
JSON-line records on the protocol pipe (``phase``, then ``done`` or ``failure`` with a kind
and a reason). The parent trusts none of it: it is parsed strictly and never executed.
"""
from __future__ import annotations

import ctypes
import importlib
import json
import os
import struct
import sys
import traceback

PROBLEM_FILE = "problem.py"   # the name the user's code is compiled under (tracebacks, lines)
_proto_fd = 3


def emit(kind: str, **fields) -> None:
    line = json.dumps({"kind": kind, **fields}, default=str) + "\n"
    try:
        os.write(_proto_fd, line.encode()[:1 << 20])
    except OSError:
        pass


class Refusal(Exception):
    def __init__(self, kind: str, reason: str, **extra):
        super().__init__(reason)
        self.kind, self.reason, self.extra = kind, reason, extra


# --------------------------------------------------------------------------- before isolation

def _warm_up(torch) -> None:
    """Export and decompose a small module that touches the ops (and the failure paths) a
    problem is likely to use, so their lazily imported modules are loaded now: after
    isolation an import cannot open its file."""
    import torch.nn as nn
    import torch.nn.functional as F

    class Warm(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin, self.ln, self.gn = nn.Linear(8, 8), nn.LayerNorm(8), nn.GroupNorm(2, 8)
            self.bn, self.inorm = nn.BatchNorm1d(8), nn.InstanceNorm1d(8)
            self.conv, self.conv1 = nn.Conv2d(2, 2, 3), nn.Conv1d(2, 2, 3)
            self.register_buffer("buf", torch.ones(8))
            self.const = torch.tensor(2.0)

        def forward(self, x, y, img):
            a = self.lin(x) * self.buf + self.const
            a = F.gelu(a) + F.gelu(a, approximate="tanh") + F.silu(a) + F.mish(a) + F.hardswish(a)
            a = a + F.softplus(a) + F.elu(a) + F.selu(a) + F.leaky_relu(a, 0.1) + F.hardtanh(a) + F.relu6(a)
            a = a + F.hardsigmoid(a) + F.logsigmoid(a) + F.softsign(a) + torch.erf(a) + torch.sign(a)
            a = self.ln(a) + self.bn(a) + self.gn(a.unsqueeze(-1)).squeeze(-1) + F.rms_norm(a, (8,))
            a = a + self.inorm(a.unsqueeze(0)).squeeze(0) + F.normalize(a, dim=1) + torch.norm(a, dim=1, keepdim=True)
            a = torch.softmax(a, 0) + torch.log_softmax(a, 1) + torch.logsumexp(a, 1, keepdim=True)
            b = a.var(1, keepdim=True) + a.std(1, keepdim=True) + a.mean((0, 1)) + a.amax(1, keepdim=True)
            b = b + torch.max(a, 1, keepdim=True)[0] + torch.min(a) + a.sum() + a.prod(1, keepdim=True)
            c = torch.clamp(a, -1, 1) + torch.where(a > 0, a, -a) + torch.minimum(a, b) + a.masked_fill(a < 0, 0.0)
            c = c + torch.triu(c) + torch.tril(c) + c ** 2 + torch.pow(c.abs(), 1.5) + torch.rsqrt(c.abs() + 1)
            c = c + torch.exp(-c) + torch.log1p(c.abs()) + torch.tanh(c) + torch.sigmoid(c) + c // 2 + c % 3
            d = torch.cat([c, c], 1)[:, 1:9] + torch.chunk(c, 2, 1)[0].repeat(1, 2) + c.flatten().view(8, 8)
            q = y.view(2, 3, 4, 8)
            att = F.scaled_dot_product_attention(q, q, q, is_causal=True) + F.scaled_dot_product_attention(q, q, q)
            e = torch.bmm(y, y.transpose(1, 2)) + torch.einsum("bij,bkj->bik", y, y) + torch.matmul(y, y.transpose(1, 2))
            f = self.conv(img).sum() + self.conv1(img[:, :, 0]).sum() + F.max_pool2d(img, 2).sum() + F.avg_pool2d(img, 2).sum()
            return d + x @ x.t(), att.float(), e.contiguous(), f, torch.argmax(d, 1), torch.cumsum(d, 1)

    model = Warm().eval()
    inputs = (torch.randn(8, 8), torch.randn(2, 12, 8), torch.randn(1, 2, 6, 6))
    with torch.no_grad():
        model(*inputs)
    table = torch.export.default_decompositions()
    table.pop(torch.ops.aten.scaled_dot_product_attention.default, None)
    ep = torch.export.export(model, inputs).run_decompositions(table)
    _serialise(ep, torch)

    class Dynamic(nn.Module):   # the data-dependent path and its error messages
        def forward(self, x):
            return x[x > 0]
    try:
        torch.export.export(Dynamic(), (torch.randn(4),))
    except Exception as exc:
        traceback.TracebackException.from_exception(exc, lookup_lines=False).format()
    try:
        torch.empty(1 << 62)
    except Exception:
        pass


def _isolate() -> list[str]:
    """The same OS isolation a candidate's child gets (kernels/harness/child.py: isolate)."""
    applied = []
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0) == 0:        # PR_SET_NO_NEW_PRIVS
        applied.append("no_new_privs")
    libc.prctl(4, 0, 0, 0, 0)                  # PR_SET_DUMPABLE 0
    if os.geteuid() == 0:
        if libc.unshare(0x40000000) == 0:      # CLONE_NEWNET
            applied.append("no_network")
        try:
            os.setgroups([])
            os.setresgid(65534, 65534, 65534)
            os.setresuid(65534, 65534, 65534)
            applied.append("uid_65534")
        except OSError:
            pass
    return applied


class _NoNewImports:
    """After isolation an import would open a file (and be killed): say so instead."""

    def find_spec(self, name, path=None, target=None):
        raise ImportError(f"module {name!r} is not available in the capture sandbox "
                          "(only modules loaded before isolation can be imported)")


def _serve_sources_from_memory(source: str) -> None:
    import linecache
    linecache.cache[PROBLEM_FILE] = (len(source), None, source.splitlines(True), PROBLEM_FILE)
    linecache.checkcache = lambda *a, **k: None
    linecache.updatecache = lambda *a, **k: []


# --------------------------------------------------------------------------- serialisation

def _enc(a, torch):
    import torch.fx
    if isinstance(a, torch.fx.Node):
        return {"node": a.name}
    if isinstance(a, bool) or a is None or isinstance(a, (int, str)):
        return a
    if isinstance(a, float):
        return a if a == a and a not in (float("inf"), float("-inf")) else {"float": repr(a)}
    if isinstance(a, (list, tuple)):
        return [_enc(x, torch) for x in a]
    if isinstance(a, torch.dtype):
        return {"dtype": str(a)}
    if isinstance(a, (torch.device, torch.layout, torch.memory_format)):
        return {"enum": str(a)}
    if isinstance(a, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return {"sym": str(a)}
    return {"other": type(a).__name__}


def _val(v, torch):
    if isinstance(v, torch.Tensor):
        shape = [d if isinstance(d, int) else {"sym": str(d)} for d in v.shape]
        return {"shape": shape, "dtype": str(v.dtype)}
    if isinstance(v, (list, tuple)):
        return [_val(x, torch) for x in v]
    if isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return {"sym": str(v)}
    if isinstance(v, (int, float, bool)) or v is None:
        return {"scalar": _enc(v, torch)}
    return {"other": type(v).__name__}


def _serialise(ep, torch) -> dict:
    sig = ep.graph_signature
    kinds = {s.arg.name: (s.kind.name, s.target) for s in sig.input_specs if hasattr(s.arg, "name")}
    out_kinds = [s.kind.name for s in sig.output_specs]
    nodes = []
    for n in ep.graph.nodes:
        rec = {"name": n.name, "op": n.op, "target": str(n.target) if n.op == "call_function" else None,
               "args": _enc(list(n.args), torch), "kwargs": {k: _enc(v, torch) for k, v in n.kwargs.items()},
               "val": _val(n.meta.get("val"), torch) if "val" in n.meta else None}
        if n.op == "placeholder":
            rec["kind"], rec["source"] = kinds.get(n.name, ("UNKNOWN", None))
        nodes.append(rec)
    return {"nodes": nodes, "output_kinds": out_kinds}


# the array types that carry data, as little-endian bytes: float32 everywhere; bool and integer
# buffers (a causal mask, positions) too, which the translation folds as constants
WIRE = {"torch.float32": "<f4", "torch.bool": "|b1", "torch.int64": "<i8", "torch.int32": "<i4"}


class _Blob:
    def __init__(self):
        self.parts, self.size = [], 0

    def add(self, tensor, torch, weight: bool = False) -> dict:
        """Record ``tensor``; its bytes go too where it is float32, or a weight of a type in WIRE."""
        t = tensor.detach().contiguous()
        rec = {"shape": list(t.shape), "dtype": str(t.dtype)}
        wire = WIRE.get(str(t.dtype)) if weight or t.dtype == torch.float32 else None
        if wire is not None:
            data = t.numpy().astype(wire, copy=False).tobytes()
            rec.update(offset=self.size, nbytes=len(data))
            self.parts.append(data)
            self.size += len(data)
        return rec


def _flatten(out, torch) -> list:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in _flatten(o, torch)]
    raise Refusal("format", f"forward returned a {type(out).__name__}; it must return tensors")


# --------------------------------------------------------------------------- the capture

def _user_error(exc: BaseException, where: str) -> Refusal:
    """The last line of the traceback, and the line of problem.py it came from."""
    if isinstance(exc, MemoryError) or "can't allocate memory" in str(exc) or "DefaultCPUAllocator" in str(exc):
        return Refusal("memory", f"ran out of memory {where}: {type(exc).__name__}: {str(exc)[:300]}")
    frames = traceback.extract_tb(exc.__traceback__, limit=64)
    line = next((f.lineno for f in reversed(frames) if f.filename == PROBLEM_FILE), None)
    last = "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines()
    text = last[-1] if last else type(exc).__name__
    at = f" (problem.py line {line})" if line else ""
    return Refusal("user_code", f"{where}{at}: {text[:500]}", line=line)


def _export_error(exc: BaseException) -> Refusal:
    text = f"{type(exc).__name__}: {exc}"
    low = text.lower()
    if any(k in low for k in ("data-dependent", "data dependent", "guardondatadependent", "unbacked",
                              "dynamic shape", "symbolic")):
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return Refusal("dynamic", f"the model has a data-dependent or dynamic shape: {first[:400]}")
    frames = traceback.extract_tb(exc.__traceback__, limit=200)
    if any(f.filename == PROBLEM_FILE for f in frames):   # the user's forward raised while traced
        return _user_error(exc, "while exporting the model (in forward)")
    if isinstance(exc, (MemoryError,)):
        return Refusal("memory", "ran out of memory while exporting the model")
    first = text.strip().splitlines()[0]
    return Refusal("export", f"torch.export could not capture the model: {first[:500]}")


def capture(source: str, request: dict, torch) -> tuple[dict, _Blob]:
    try:
        code = compile(source, PROBLEM_FILE, "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise Refusal("syntax", f"syntax error on line {exc.lineno}: {exc.msg}", line=exc.lineno)
    ns = {"__name__": "problem", "__file__": PROBLEM_FILE, "__builtins__": __builtins__}
    emit("phase", phase="import")
    try:
        exec(code, ns)
    except BaseException as exc:   # SystemExit too: user code may not end the capture quietly
        raise _user_error(exc, "while importing the problem file")
    missing = [n for n in ("Model", "get_inputs", "get_init_inputs") if not callable(ns.get(n))]
    if missing:
        raise Refusal("format", "the problem file defines no " + ", ".join(missing) +
                      " (the KernelBench format needs class Model, get_inputs() and get_init_inputs())")
    import random
    import numpy as np

    def seeded(seed):
        torch.manual_seed(seed)
        random.seed(seed)
        np.random.seed(seed)

    emit("phase", phase="build")
    try:
        seeded(request["init_seed"])
        init = ns["get_init_inputs"]()
        model = ns["Model"](*list(init or []))
        if not isinstance(model, torch.nn.Module):
            raise Refusal("format", f"Model(...) made a {type(model).__name__}, not an nn.Module")
        model = model.eval()
    except Refusal:
        raise
    except BaseException as exc:
        raise _user_error(exc, "while building Model(*get_init_inputs())")
    samples = []
    for seed in request["seeds"]:
        try:
            seeded(seed)
            inputs = ns["get_inputs"]()
            if not isinstance(inputs, (list, tuple)):
                raise Refusal("format", f"get_inputs() returned a {type(inputs).__name__}, not a list")
            inputs = list(inputs)
        except Refusal:
            raise
        except BaseException as exc:
            raise _user_error(exc, "while calling get_inputs()")
        samples.append(inputs)
    first = samples[0]
    for i, t in enumerate(first):
        if not isinstance(t, torch.Tensor):
            continue   # Python scalars are baked into the graph by export
        if t.dtype != torch.float32:
            hint = ("; token ids? import the model from its embedded hidden states (lookups at positions "
                    "fixed in the model, such as torch.arange, are supported)") if not t.dtype.is_floating_point \
                and t.dtype != torch.bool else ""
            raise Refusal("dtype", f"input {i} of get_inputs() is {t.dtype}; only float32 tensors are supported{hint}")
    emit("phase", phase="export")
    try:
        with torch.no_grad():
            ep = torch.export.export(model, tuple(first))
            table = torch.export.default_decompositions()
            table.pop(torch.ops.aten.scaled_dot_product_attention.default, None)
            ep = ep.run_decompositions(table)
    except Refusal:
        raise
    except MemoryError:
        raise Refusal("memory", "ran out of memory while exporting the model")
    except BaseException as exc:
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise _user_error(exc, "while exporting the model")
        raise _export_error(exc)
    graph = _serialise(ep, torch)
    blob = _Blob()
    weights = {}
    for rec in graph["nodes"]:
        if rec["op"] == "placeholder" and rec["kind"] in ("PARAMETER", "BUFFER", "CONSTANT_TENSOR"):
            src = rec["source"]
            value = ep.state_dict.get(src) if rec["kind"] != "CONSTANT_TENSOR" else ep.constants.get(src)
            if value is None:
                value = ep.constants.get(src)
            if isinstance(value, torch.Tensor):
                weights[rec["name"]] = blob.add(value, torch, weight=True)
    emit("phase", phase="run")
    runs = []
    for seed, inputs in zip(request["seeds"], samples):
        try:
            with torch.no_grad():
                outs = _flatten(model(*inputs), torch)
        except Refusal:
            raise
        except BaseException as exc:
            raise _user_error(exc, "while running the model's forward")
        runs.append({"seed": seed, "inputs": [blob.add(t, torch) if isinstance(t, torch.Tensor) else {"scalar": _enc(t, torch)}
                                for t in inputs],
                     "outputs": [blob.add(t, torch) for t in outs]})
    header = {"graph": graph, "weights": weights, "samples": runs, "torch": torch.__version__}
    return header, blob


def prepare():
    """Everything before the user's file is read: torch loaded and warmed up. Returns torch
    and notes for the isolation record. The capture server runs this once and forks."""
    import torch
    torch.set_num_threads(1)
    # modules problem files commonly import, and ours, loaded now: after isolation no import can happen
    for name in ("math", "random", "functools", "itertools", "collections", "typing", "dataclasses", "numpy",
                 "kernels.harness.seccomp", "kernels.harness.sandbox"):
        importlib.import_module(name)
    try:
        _warm_up(torch)
        return torch, []
    except Exception as exc:   # a torch change: carry on, lazily imported paths may then be refused
        return torch, [f"warm-up incomplete: {type(exc).__name__}: {str(exc)[:200]}"]


def main(workdir: str, prepared=None) -> int:
    global _proto_fd
    _proto_fd = int(os.environ.pop("INT21_PROTO_FD", 3))
    os.chdir(workdir)
    with open("request.json") as f:
        request = json.load(f)
    with open(PROBLEM_FILE, encoding="utf-8") as f:
        source = f.read()
    out = os.open("result.bin", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.environ["HOME"] = os.environ["TMPDIR"] = workdir
    emit("phase", phase="prepare")
    torch, warm = prepared or prepare()
    from kernels.harness import seccomp
    from kernels.harness.sandbox import Limits, apply_limits
    applied = _isolate() + warm
    lim = request["limits"]
    apply_limits(Limits(cpu_seconds=lim["cpu_seconds"], memory_mb=lim["memory_mb"],
                        file_mb=lim["result_mb"], open_files=64), relative_memory=True)
    _serve_sources_from_memory(source)
    sys.meta_path.insert(0, _NoNewImports())
    why_not = seccomp.install(profile="capture")
    applied.append("seccomp" if why_not is None else f"no seccomp: {why_not}")
    emit("hello", pid=os.getpid(), isolation=applied)
    try:
        header, blob = capture(source, request, torch)
    except Refusal as r:
        emit("failure", failure=r.kind, reason=r.reason, **r.extra)
        return 0
    head = json.dumps(header, separators=(",", ":")).encode()
    try:
        os.write(out, struct.pack("<Q", len(head)))
        _write_all(out, head)
        for part in blob.parts:
            _write_all(out, part)
    except OSError as exc:
        emit("failure", failure="too_large", reason=f"the capture did not fit the result limit ({exc.strerror})")
        return 0
    os.close(out)
    emit("done", header_bytes=len(head), blob_bytes=blob.size)
    return 0


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
