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

A phase runs at the shapes it was imported and judged at (a captured graph is specialised to
its shape, docs/engine.md open question 1): a call picks the shape whose activations match the
arrays it is given, and anything else is a ValueError naming the shapes there are.
"""
from __future__ import annotations

import ctypes
import os

import numpy as np

from kernels import library, native
from kernels.library import LibraryError

ENGINE_SIGNED_FIELDS = ("kind", "engine", "version", "model", "phases", "weights", "approvals")
_KINDS = {"in": ctypes.c_void_p, "out": ctypes.c_void_p, "dim": ctypes.c_int64, "f32": ctypes.c_float}


def _ptr(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


class EnginePhase:
    """One phase in-process: ``phase(*activations, out=None)`` with float32 arrays in the
    order of ``phase.inputs``; returns its outputs (a tuple when there are several). ``out``:
    preallocated outputs (a tuple), written in place. ``phase.raw`` is the ctypes function."""

    def __init__(self, name: str, info: dict, path, weights: dict[str, np.ndarray]):
        self.name, self.info, self.path = name, info, path
        self.inputs = list(info["inputs"])
        self._lib = ctypes.CDLL(str(path), mode=os.RTLD_NOW | os.RTLD_LOCAL)
        self.raw = self._lib.kernel
        args = info["args"]
        self.raw.argtypes = [_KINDS[a["kind"]] for a in args]
        self.raw.restype = None
        self.outputs = [a["name"] for a in args if a["kind"] == "out"]
        self._by_shape = {}
        for entry in info["shapes"]:
            key = tuple(tuple(entry["inputs"][n]) for n in self.inputs)
            wptr = dict(zip(info["weight_args"], (_ptr(weights[w]) for w in entry["weights"])))
            # the argument list with every weight and dim in place; activations and outputs
            # are filled in per call at these positions
            template, slots = [], {}
            for i, a in enumerate(args):
                if a["kind"] == "dim":
                    template.append(int(entry["dims"][a["name"]]))
                elif a["name"] in wptr:
                    template.append(wptr[a["name"]])
                else:
                    slots[a["name"]] = i
                    template.append(0)
            outs = [tuple(entry["outputs"][n]) for n in self.outputs]
            self._by_shape[key] = (template, [slots[n] for n in self.inputs], [slots[n] for n in self.outputs], outs)
        self._weights = weights       # the arrays the pointers point into stay alive with the phase

    def __repr__(self) -> str:
        return f"<EnginePhase {self.name} ({len(self._by_shape)} shapes) {self.path.name}>"

    def shapes(self) -> list[dict]:
        """The shapes this phase runs at: each activation's shape, by name."""
        return [dict(zip(self.inputs, key)) for key in self._by_shape]

    def plan(self, *arrays):
        """(argument template, input slots, output slots, output shapes) for these arrays."""
        key = tuple(a.shape for a in arrays)
        found = self._by_shape.get(key)
        if found is None:
            have = "; ".join(", ".join(f"{n} {list(s)}" for n, s in zip(self.inputs, k)) for k in self._by_shape)
            got = ", ".join(f"{n} {list(a.shape)}" for n, a in zip(self.inputs, arrays))
            raise ValueError(f"{self.name} was approved at these shapes only: {have}; got {got}")
        return found

    def __call__(self, *arrays, out=None):
        if len(arrays) != len(self.inputs):
            raise TypeError(f"{self.name} takes {len(self.inputs)} arrays ({', '.join(self.inputs)}), got {len(arrays)}")
        arrays = [a if isinstance(a, np.ndarray) and a.dtype == np.float32 and a.flags.c_contiguous
                  else np.ascontiguousarray(a, dtype=np.float32) for a in arrays]
        template, in_slots, out_slots, out_shapes = self.plan(*arrays)
        if out is None:
            out = tuple(np.empty(s, dtype=np.float32) for s in out_shapes)
        else:
            out = tuple(out)
            for o, s, n in zip(out, out_shapes, self.outputs):
                if o.shape != s or o.dtype != np.float32 or not o.flags.c_contiguous:
                    raise ValueError(f"out {n} must be a contiguous float32 array of shape {list(s)}")
        values = list(template)
        for i, a in zip(in_slots, arrays):
            values[i] = _ptr(a)
        for i, o in zip(out_slots, out):
            values[i] = _ptr(o)
        self.raw(*values)
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
        x = self.embed(tokens) if np.issubdtype(np.asarray(tokens).dtype, np.integer) else tokens
        return phase(x, out=out)

    def decode(self, token, kv, *, out=None):
        """``token``: int ids [batch] or [batch, 1] (or x [batch, 1, hidden]); ``kv``: the cache
        [layers, 2, batch, kv_heads, past, head_dim] → (logits [batch, 1, vocab], the new rows
        [layers, 2, batch, kv_heads, 1, head_dim] for position ``past``)."""
        phase = self._phase("decode")
        if np.issubdtype(np.asarray(token).dtype, np.integer):
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
            template, in_slots, out_slots, out_shapes = ph.plan(*tensors)
            outs = [torch.empty(s, dtype=torch.float32) for s in out_shapes]
            values = list(template)
            for i, t in zip(in_slots, tensors):
                values[i] = t.data_ptr()
            for i, o in zip(out_slots, outs):
                values[i] = o.data_ptr()
            ph.raw(*values)
            return outs[0] if len(outs) == 1 else tuple(outs)

        def _fake(*tensors):
            shapes = ph.plan(*tensors)[3]
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
