"""Approved engines at native speed, in the caller's own process.

    from kernels import library
    eng = library.load_engine("tiny")           # the current version, checked against its approval
    logits, kv = eng.prefill(tokens)            # int ids [batch, seq] (or hidden states [batch, seq, hidden])
    logits, rows = eng.decode(token, kv)        # ids [batch] or [batch, 1] (or x [batch, 1, hidden])
    kv = np.concatenate([kv, rows], axis=4)     # the grown cache (docs/engine.md, KV layout)
    prefill = eng.torch_op("prefill")           # the same phase as a torch.library custom op

The same trust boundary as approved kernels (:mod:`kernels.native`, whose checks and build
cache this uses): every phase's source must match the digest in the version's manifest, the
weights file too, the manifest must record the approvals its proposal required, and in a
keyed library (``INT21_LIBRARY_KEY``) its signature must verify — before anything is built or
loaded. Each phase is its own shared object (its entry point is ``kernel``), loaded with
``RTLD_LOCAL``.

A phase runs at the shapes it was imported and judged at, and at every length inside a range
one shared unit serves (kernels.codegen.dynamic; the manifest's ``ranges``, each activation's
shape affine in the length): a call picks the shape or range whose activations match the
arrays it is given, and anything else is a ValueError naming the shapes and ranges there are.
"""
from __future__ import annotations

import ctypes
import functools
import os
import re
import threading

import numpy as np

from kernels import library, native
from kernels.library import LibraryError

ENGINE_SIGNED_FIELDS = ("kind", "engine", "version", "model", "phases", "weights", "approvals")
_LOCKS: dict = {}   # library file (real path) → the lock its calls take
_KINDS = {"in": ctypes.c_void_p, "out": ctypes.c_void_p, "dim": ctypes.c_int64, "f32": ctypes.c_float}


def _ptr(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def _ids(a) -> bool:
    """Are these token ids (integers)? (np.issubdtype costs ~1 µs a call here; this ~0.1.)"""
    return (a.dtype if isinstance(a, np.ndarray) else np.asarray(a).dtype).kind in "iu"


def trampoline(info: dict) -> str:
    """C for one phase: ``call_<k>(activations..., outputs...)`` per shape ``k`` calls the
    phase's entry point with that shape's weights (set once by ``set_weight``) and dims (as
    constants). Python then passes 4 pointers a call instead of 36 arguments (ctypes converts
    each: ~0.1 µs an argument here). Generated from the verified manifest, never from the
    approved source; the entry point's address is bound at load (``bind``)."""
    kinds = {"in": "const void *", "out": "void *", "dim": "int64_t", "f32": "float"}
    args, weights = info["args"], info["weight_args"]
    io = [a["name"] for a in args if a["kind"] in ("in", "out") and a["name"] not in weights]
    lines = ["#include <stdint.h>", f"typedef void (*fn_t)({', '.join(kinds[a['kind']] for a in args)});",
             "static fn_t k;", f"static const void *W[{len(info['shapes'])}][{max(len(weights), 1)}];",
             "void bind(void *f) { k = (fn_t)f; }",
             "void set_weight(int s, int i, const void *p) { W[s][i] = p; }"]
    for j, entry in enumerate(info["shapes"]):
        call = []
        for a in args:
            if a["kind"] == "dim":
                call.append(f"{int(entry['dims'][a['name']])}")
            elif a["name"] in weights:
                call.append(f"W[{j}][{weights.index(a['name'])}]")
            else:
                call.append(f"p_{io.index(a['name'])}")
        params = ", ".join(f"void *p_{i}" for i in range(len(io)))
        lines.append(f"void call_{j}({params}) {{ k({', '.join(call)}); }}")
    for j, r in enumerate(info.get("ranges") or []):
        if not re.fullmatch(r"[A-Za-z_]\w*", str(r["dim"])) or r["dim"] not in {a["name"] for a in args}:
            raise LibraryError(f"a range names {r['dim']!r}, not one of the phase's dims")
        entry = info["shapes"][int(r["shape"])]
        call = [r["dim"] if a["kind"] == "dim" and a["name"] == r["dim"] else
                f"{int(entry['dims'][a['name']])}" if a["kind"] == "dim" else
                f"W[{r['shape']}][{weights.index(a['name'])}]" if a["name"] in weights else
                f"p_{io.index(a['name'])}" for a in args]
        params = ", ".join([f"int64_t {r['dim']}"] + [f"void *p_{i}" for i in range(len(io))])
        lines.append(f"void range_{j}({params}) {{ if ({r['dim']} >= {int(r['lo'])} && {r['dim']} <= {int(r['hi'])}) "
                     f"k({', '.join(call)}); }}")
    return "\n".join(lines) + "\n"


class EnginePhase:
    """One phase in-process: ``phase(*activations, out=None)`` with float32 arrays in the
    order of ``phase.inputs``; returns its outputs (a tuple when there are several). ``out``:
    preallocated outputs (a tuple), written in place. ``phase.raw`` is the entry point itself
    (ctypes; every argument of the ABI)."""

    def __init__(self, name: str, info: dict, path, weights: dict[str, np.ndarray]):
        self.name, self.info, self.path = name, info, path
        # one call at a time per library file: the program keeps its arena and its team's
        # barrier (kernels/codegen/team.py) in static storage, shared by every caller
        self._lock = _LOCKS.setdefault(os.path.realpath(path), threading.Lock())
        self.inputs = list(info["inputs"])
        self._lib = ctypes.CDLL(str(path), mode=os.RTLD_NOW | os.RTLD_LOCAL)
        self.raw = self._lib.kernel
        args = info["args"]
        self.raw.argtypes = [_KINDS[a["kind"]] for a in args]
        self.raw.restype = None
        self.outputs = [a["name"] for a in args if a["kind"] == "out"]
        order = [a["name"] for a in args if a["kind"] in ("in", "out") and a["name"] not in info["weight_args"]]
        if order != self.inputs + self.outputs:
            raise LibraryError(f"{name}: the ABI's activations and outputs are not in the manifest's order")
        self._tramp = ctypes.CDLL(str(native.build(trampoline(info), {})), mode=os.RTLD_NOW | os.RTLD_LOCAL)
        self._tramp.bind.argtypes = [ctypes.c_void_p]
        self._tramp.bind(ctypes.cast(self.raw, ctypes.c_void_p))
        self._tramp.set_weight.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
        self._by_shape = {}
        for j, entry in enumerate(info["shapes"]):
            for i, w in enumerate(entry["weights"]):
                self._tramp.set_weight(j, i, _ptr(weights[w]))
            fn = getattr(self._tramp, f"call_{j}")
            fn.argtypes = [ctypes.c_void_p] * len(order)
            fn.restype = None
            key = tuple(tuple(entry["inputs"][n]) for n in self.inputs)
            self._by_shape[key] = (fn, tuple(tuple(entry["outputs"][n]) for n in self.outputs))
        self._ranges, self._ranged = [], {}
        for j, r in enumerate(info.get("ranges") or []):
            fn = getattr(self._tramp, f"range_{j}")
            fn.argtypes = [ctypes.c_int64] + [ctypes.c_void_p] * len(order)
            fn.restype = None
            self._ranges.append((r, fn))
        self._weights = weights       # the arrays the pointers point into stay alive with the phase
        self._last: dict[int, tuple] = {}

    def __repr__(self) -> str:
        return f"<EnginePhase {self.name} ({len(self._by_shape)} shapes) {self.path.name}>"

    def shapes(self) -> list[dict]:
        """The shapes this phase was approved at (each activation's shape, by name); the ranges
        it also runs over are ``ranges()``."""
        return [dict(zip(self.inputs, key)) for key in self._by_shape]

    def ranges(self) -> list[dict]:
        """The lengths a shared unit serves: [{"dim", "lo", "hi"}]."""
        return [{k: r[k] for k in ("dim", "lo", "hi")} for r, _ in self._ranges]

    def plan(self, *arrays):
        """(the shape's call, its output shapes) for these arrays: an approved shape's, or, for a
        length inside a shared unit's range, that range's with the length bound (cached)."""
        key = tuple(a.shape for a in arrays)
        found = self._by_shape.get(key) or self._ranged.get(key)
        if found is None:
            found = self._in_range(key)
            if found is None:
                have = "; ".join(", ".join(f"{n} {list(s)}" for n, s in zip(self.inputs, k)) for k in self._by_shape)
                spans = "".join(f"; and every {r['dim']} in {r['lo']}..{r['hi']}" for r, _ in self._ranges)
                got = ", ".join(f"{n} {list(a.shape)}" for n, a in zip(self.inputs, arrays))
                raise ValueError(f"{self.name} was approved at these shapes only: {have}{spans}; got {got}")
            self._ranged[key] = found
        return found

    def _in_range(self, key):
        """(call, output shapes) where the activations' shapes are one range's at some length."""
        for r, fn in self._ranges:
            at = None
            for name, shape in zip(self.inputs, key):
                axes = r["inputs"][name]
                if len(axes) != len(shape):
                    break
                for (slope, icpt), v in zip(axes, shape):
                    if slope and at is None and (v - icpt) % slope == 0:
                        at = (v - icpt) // slope
            if at is None or not r["lo"] <= at <= r["hi"] or any(
                    tuple(a * at + b for a, b in r["inputs"][n]) != s for n, s in zip(self.inputs, key)):
                continue
            outs = tuple(tuple(a * at + b for a, b in r["outputs"][n]) for n in self.outputs)
            return functools.partial(fn, at), outs
        return None

    def _pointer(self, slot: int, a: np.ndarray) -> int:
        # The array passed at this slot last time is held (so its buffer cannot move or be
        # freed): passing it again skips __array_interface__, ~1 µs an array on this host.
        last = self._last.get(slot)
        if last is not None and last[0] is a:
            return last[1]
        ptr = _ptr(a)
        self._last[slot] = (a, ptr)
        return ptr

    def __call__(self, *arrays, out=None):
        if len(arrays) != len(self.inputs):
            raise TypeError(f"{self.name} takes {len(self.inputs)} arrays ({', '.join(self.inputs)}), got {len(arrays)}")
        arrays = [a if type(a) is np.ndarray and a.dtype == np.float32 and a.flags.c_contiguous
                  else np.ascontiguousarray(a, dtype=np.float32) for a in arrays]
        call, out_shapes = self.plan(*arrays)
        if out is None:
            out = tuple(np.empty(s, dtype=np.float32) for s in out_shapes)
        else:
            out = tuple(out)
            for o, s, n in zip(out, out_shapes, self.outputs):
                if type(o) is not np.ndarray or o.shape != s or o.dtype != np.float32 or not o.flags.c_contiguous:
                    raise ValueError(f"out {n} must be a contiguous float32 array of shape {list(s)}")
        with self._lock:
            call(*[self._pointer(i, a) for i, a in enumerate((*arrays, *out))])
        return out[0] if len(out) == 1 else out


class NativeEngine:
    """An approved engine: its phases as attributes (``eng.prefill``, ``eng.decode``, or
    ``eng.forward`` for a module file's engine), each an :class:`EnginePhase`; integer token
    ids given to ``prefill``/``decode`` are looked up in the model's embedding first."""

    def __init__(self, manifest: dict, phases: dict[str, EnginePhase], embed: np.ndarray | None):
        self.manifest, self.phases, self.embedding = manifest, phases, embed
        self.name, self.version = manifest["engine"], manifest["version"]

    def __repr__(self) -> str:
        return f"<NativeEngine {self.name} v{self.version}: {', '.join(self.phases)}>"

    def __getattr__(self, item):
        phases = self.__dict__.get("phases") or {}
        if item in phases and item not in ("prefill", "decode"):
            return phases[item]
        raise AttributeError(item)

    def embed(self, ids) -> np.ndarray:
        if self.embedding is None:
            raise TypeError(f"{self.name} has no token embedding (a module file's engine): pass hidden states")
        ids = np.asarray(ids)
        if ids.size and (ids.min() < 0 or ids.max() >= len(self.embedding)):
            raise ValueError(f"token ids must be in 0..{len(self.embedding) - 1}")
        return self.embedding[ids]

    def _phase(self, name: str) -> EnginePhase:
        if name not in self.phases:
            raise AttributeError(f"{self.name} has no {name} phase (it has {', '.join(self.phases)})")
        return self.phases[name]

    def prefill(self, tokens, *, out=None):
        """``tokens``: int ids [batch, seq] (or hidden states [batch, seq, hidden]) →
        (logits [batch, seq, vocab], kv [layers, 2, batch, kv_heads, seq, head_dim])."""
        phase = self._phase("prefill")
        x = self.embed(tokens) if _ids(tokens) else tokens
        return phase(x, out=out)

    def decode(self, token, kv, *, out=None):
        """``token``: int ids [batch] or [batch, 1] (or x [batch, 1, hidden]); ``kv``: the cache
        [layers, 2, batch, kv_heads, past, head_dim] → (logits [batch, 1, vocab], the new rows
        [layers, 2, batch, kv_heads, 1, head_dim] for position ``past``)."""
        phase = self._phase("decode")
        if _ids(token):
            ids = np.asarray(token)
            token = self.embed(ids.reshape(-1, 1) if ids.ndim < 2 else ids)
        return phase(token, kv, out=out)

    def torch_op(self, phase: str):
        """The phase as a ``torch.library`` custom op, ``int21::<engine>_<phase>_v<N>``, on CPU
        float32 tensors (activations in, outputs allocated by torch), with a fake
        implementation for tracing; the weights are bound, so the op takes only activations."""
        import torch
        ph = self._phase(phase)

        def _impl(*tensors):
            tensors = [t if t.is_contiguous() and t.dtype == torch.float32 else t.contiguous().float() for t in tensors]
            call, out_shapes = ph.plan(*tensors)
            if torch.get_default_dtype() is torch.float32:
                outs = [torch.empty(*s) if s else torch.empty(()) for s in out_shapes]   # the fastest here
            else:
                outs = [torch.empty(s, dtype=torch.float32) for s in out_shapes]
            with ph._lock:
                call(*[t.data_ptr() for t in tensors], *[o.data_ptr() for o in outs])
            return outs[0] if len(outs) == 1 else tuple(outs)

        def _fake(*tensors):
            shapes = ph.plan(*tensors)[1]
            made = [tensors[0].new_empty(s) for s in shapes]
            return made[0] if len(made) == 1 else tuple(made)

        schema = "(" + ", ".join(f"Tensor {n}" for n in ph.inputs) + ") -> " + (
            "Tensor" if len(ph.outputs) == 1 else "(" + ", ".join("Tensor" for _ in ph.outputs) + ")")
        return native.define_op(f"{self.name}_{phase}_v{self.version}", schema, _impl, _fake)


def check_engine_approved(manifest: dict, sources: dict, weights: bytes) -> None:
    """Raise LibraryError unless every phase's source and the weights are what the
    manifest's reviewers approved (kernels.native.verify: digests, approvals, signature)."""
    where = f"engine {manifest.get('engine')} v{manifest.get('version')}"
    if manifest.get("kind") != "engine" or not isinstance(manifest.get("phases"), dict):
        raise LibraryError(f"{where}: not an engine manifest")
    files = [(f"the {phase} source", sources.get(phase, ""), (info or {}).get("source_sha256"))
             for phase, info in manifest["phases"].items()]
    files.append(("the weights file", weights, (manifest.get("weights") or {}).get("sha256")))
    native.verify(manifest, where, files, ENGINE_SIGNED_FIELDS)


def unpack_weights(manifest: dict, weights: bytes) -> dict[str, np.ndarray]:
    flat = np.frombuffer(weights, dtype=np.float32)
    out = {}
    for t in manifest["weights"]["tensors"]:
        n = int(np.prod(t["shape"]))
        out[t["name"]] = flat[t["offset"]:t["offset"] + n].reshape(t["shape"])
    return out


def load_engine(name: str, version: int | None = None, *, root=None) -> NativeEngine:
    """The approved engine ``name`` loaded into this process (see the module's docstring)."""
    manifest, sources, weights = library.engine_files(name, version, root)
    check_engine_approved(manifest, sources, weights)
    tables = unpack_weights(manifest, weights)
    phases = {phase: EnginePhase(phase, info, native.build(sources[phase], info.get("params") or {}), tables)
              for phase, info in manifest["phases"].items()}
    emb = manifest["weights"].get("embedding")
    return NativeEngine(manifest, phases, tables[emb] if emb else None)
