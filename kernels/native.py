"""Approved kernels at native speed, in the caller's own process.

    from kernels import native
    softmax = native.load("softmax")            # the champion, checked against its approval
    softmax(x, out=y)                           # a ctypes call: ~1-3 µs over the kernel itself
    op = native.torch_op("softmax")             # the same kernel as a torch.library custom op
    y = op(torch.from_numpy(x))

Approval is the trust boundary. Unapproved code only ever runs in the harness's sandbox
(``kernels.harness.call``); a kernel in the library passed the approval gate, so it may be
loaded here — but only the exact bytes the reviewers approved: the source must match the
digest in its manifest, the manifest must record the approvals its goal required, and, when
the library is keyed (``INT21_LIBRARY_KEY``), the manifest's signature must verify. The
shared object is built from that source with the harness's flags and cached beside a digest
of its own bytes; a built file that no longer matches is never loaded (it is built again).
``verify`` (the check), ``signed``, ``build`` and ``define_op`` are shared with approved
engines (:mod:`kernels.engine.native`, ``kernels.library.load_engine``).
"""
from __future__ import annotations

import ctypes
import hashlib
import hmac
import json
import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from kernels import library, workloads
from kernels.library import LibraryError
from kernels.targets.base import cache_dir, param_prelude

SIGNED_FIELDS = ("workload", "target", "version", "source_sha256", "params", "approvals")


# --------------------------------------------------------------------------- signatures

def _key() -> bytes | None:
    raw = os.environ.get("INT21_LIBRARY_KEY", "")
    return raw.encode() if raw else None


def signature(manifest: dict, key: bytes, fields=SIGNED_FIELDS) -> str:
    body = json.dumps({k: manifest.get(k) for k in fields}, sort_keys=True, default=str)
    return hmac.new(key, body.encode(), "sha256").hexdigest()


def signed(manifest: dict, fields=SIGNED_FIELDS) -> dict:
    """``manifest`` with its signature, when this library is keyed (``INT21_LIBRARY_KEY``); as
    it is otherwise. The promotion services sign what they write to the library folder."""
    key = _key()
    if key is None:
        return manifest
    return {**manifest, "signature": signature(manifest, key, fields)}


def verify(manifest: dict, where: str, files, fields=SIGNED_FIELDS) -> None:
    """Raise LibraryError unless every ``(what, content, digest)`` in ``files`` matches its
    digest, the manifest records the approvals its proposal required, and, in a keyed
    library, the manifest's signature over ``fields`` verifies. The one check in front of
    every in-process load (kernels here, engines in :mod:`kernels.engine.native`)."""
    for what, content, digest in files:
        got = hashlib.sha256(content if isinstance(content, bytes) else content.encode()).hexdigest()
        if not digest or got != digest:
            raise LibraryError(f"{where}: {what} does not match the digest its reviewers approved")
    approvals = manifest.get("approvals") or []
    needed = int((manifest.get("proposal") or {}).get("required_approvals") or 1)
    if len(approvals) < needed:
        raise LibraryError(f"{where}: the manifest records {len(approvals)} approval(s) of the {needed} "
                           "required: only approved code runs in-process")
    key = _key()
    if key is not None:
        sig = manifest.get("signature")
        if not sig or not hmac.compare_digest(sig, signature(manifest, key, fields)):
            raise LibraryError(f"{where}: the manifest's signature does not verify under this library's key")


def check_approved(manifest: dict, source: str) -> None:
    """Raise LibraryError unless ``source`` is what the manifest's reviewers approved."""
    where = f"{manifest.get('workload')} v{manifest.get('version')} on {manifest.get('target')}"
    verify(manifest, where, [("the kernel source", source, manifest.get("source_sha256"))])


# --------------------------------------------------------------------------- building

def build(source: str, params: dict) -> Path:
    """The approved source as a shared object, built with the harness's CPU flags; cached by
    content, with a digest of the built bytes kept beside it and checked on every load."""
    from kernels.targets.cpu import CC, SHARED_FLAGS, compiler_version, include_digest
    text = param_prelude(params) + source
    key = hashlib.sha256("\0".join([text, " ".join(SHARED_FLAGS), compiler_version(), include_digest()]).encode()).hexdigest()[:32]
    folder = cache_dir() / "native"
    folder.mkdir(parents=True, exist_ok=True)
    so, digest_file = folder / f"{key}.so", folder / f"{key}.sha256"
    if so.exists() and digest_file.exists():
        if hashlib.sha256(so.read_bytes()).hexdigest() == digest_file.read_text().strip():
            return so
        # Changed since it was built: never loaded. The approved source is built again.
        so.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="int21-native-") as tmp:
        src = Path(tmp) / "kernel.c"
        src.write_text(text)
        out = Path(tmp) / "kernel.so"
        done = subprocess.run([CC, *SHARED_FLAGS, "-o", str(out), str(src), "-lm"], capture_output=True, text=True,
                              timeout=120)
        if done.returncode != 0:
            raise LibraryError(f"the approved code did not build here: {done.stderr.strip()[-300:]}")
        data = out.read_bytes()
    tmp_so = folder / f".{key}.{os.getpid()}.tmp"
    tmp_so.write_bytes(data)
    os.replace(tmp_so, so)
    digest_file.write_text(hashlib.sha256(data).hexdigest())
    return so


# --------------------------------------------------------------------------- the callable

class NativeKernel:
    """``kernel(*inputs, out=None, **scalars_and_dims)``: NumPy float32 arrays in ABI order (or
    by name); outputs are allocated unless ``out=`` (one array, or a dict by name) is given.
    ``kernel.raw`` is the ctypes function itself, for callers that pass pointers."""

    def __init__(self, workload: str, manifest: dict, path: Path):
        self.workload, self.manifest, self.path = workload, manifest, path
        self._wl = workloads.get(workload)
        self._lib = ctypes.CDLL(str(path), mode=os.RTLD_NOW | os.RTLD_LOCAL)
        self.raw = self._lib.kernel
        kinds = {"in": ctypes.c_void_p, "out": ctypes.c_void_p, "dim": ctypes.c_int64, "f32": ctypes.c_float}
        self.raw.argtypes = [kinds[a.kind] for a in self._wl.args]
        self.raw.restype = None
        self._dims_cache: tuple | None = None

    def __repr__(self) -> str:
        return f"<NativeKernel {self.workload} v{self.manifest.get('version')} {self.path.name}>"

    def __call__(self, *args, out=None, **named):
        wl = self._wl
        in_names = wl.input_names()
        arrays = dict(zip(in_names, args))
        for n in in_names:
            if n in named:
                arrays[n] = named.pop(n)
        for n, a in arrays.items():
            if not (isinstance(a, np.ndarray) and a.dtype == np.float32 and a.flags.c_contiguous):
                arrays[n] = np.ascontiguousarray(a, dtype=np.float32)
        key = tuple(a.shape for a in arrays.values())
        if self._dims_cache is None or self._dims_cache[0] != key:
            given = {d: int(named[d]) for d in wl.shape_dims if d in named}
            dims = library.infer_dims(self.workload, arrays, given)
            shapes = {n: tuple(int(v) for v in s) for n, s in wl.out_shapes(
                library.Shape(tuple((d, dims[d]) for d in wl.shape_dims))).items()}
            self._dims_cache = (key, dims, shapes)
        _, dims, shapes = self._dims_cache
        outs = out if isinstance(out, dict) else ({wl.output_names()[0]: out} if out is not None else {})
        for n, shp in shapes.items():
            if n not in outs:
                outs[n] = np.empty(shp, dtype=np.float32)
            elif outs[n].shape != shp or outs[n].dtype != np.float32 or not outs[n].flags.c_contiguous:
                raise ValueError(f"out {n} must be a contiguous float32 array of shape {shp}")
        values = []
        for a in wl.args:
            if a.kind == "in":
                values.append(arrays[a.name].ctypes.data)
            elif a.kind == "out":
                values.append(outs[a.name].ctypes.data)
            elif a.kind == "dim":
                values.append(dims[a.name])
            else:
                values.append(float(named[a.name]))
        self.raw(*values)
        return outs[wl.output_names()[0]] if len(outs) == 1 else outs


def load(workload: str, target: str = "cpu", shape_bucket: str | None = None, *, root=None) -> NativeKernel:
    """The approved champion for (workload, target), loaded into this process."""
    if target != "cpu":
        raise LibraryError(f"in-process loading is for CPU kernels; {target} kernels run through the harness")
    found = library.champions(workload, target, root)
    if not found:
        raise LibraryError(f"no promoted {workload} kernel for {target} in {library.library_dir(root)}")
    if shape_bucket is not None and shape_bucket not in found:
        raise LibraryError(f"no {workload} champion on {target} for shape bucket {shape_bucket}")
    manifest = found[shape_bucket] if shape_bucket else max(found.values(), key=lambda m: m["version"])
    source = manifest.pop("source")
    check_approved(manifest, source)
    return NativeKernel(workload, manifest, build(source, manifest.get("params") or {}))


# --------------------------------------------------------------------------- torch

_OPS: dict[str, object] = {}


def define_op(name: str, schema: str, impl, fake):
    """Register ``int21::<name>`` once per process as a ``torch.library`` custom op on CPU
    (``impl``) with a fake implementation for tracing (``fake``); returns the op's callable.
    The kernel ops and the engine phases' ops (:mod:`kernels.engine.native`) both go through it."""
    import torch
    qualified = f"int21::{name}"
    if qualified not in _OPS:
        torch.library.define(qualified, schema)
        torch.library.impl(qualified, "CPU")(impl)
        torch.library.register_fake(qualified)(fake)
        _OPS[qualified] = getattr(torch.ops.int21, name)
    return _OPS[qualified]


def torch_op(workload: str, target: str = "cpu", shape_bucket: str | None = None, *, root=None):
    """The approved kernel as a ``torch.library`` custom op (``int21::<workload>_v<N>``) on CPU
    float32 tensors, with a fake implementation for tracing; returns the op's Python callable.
    Inputs in ABI order; f32 scalars by keyword; returns the output tensor (or a tuple)."""
    import torch
    kernel = load(workload, target, shape_bucket, root=root)
    wl = workloads.get(workload)
    name = f"{workload}_v{kernel.manifest['version']}"
    if f"int21::{name}" in _OPS:
        return _OPS[f"int21::{name}"]
    in_names, out_names = wl.input_names(), wl.output_names()
    scalar_names = [a.name for a in wl.args if a.kind == "f32"]
    params = ", ".join([f"Tensor {n}" for n in in_names] + [f"float {n}=0.0" for n in scalar_names])
    returns = "Tensor" if len(out_names) == 1 else "(" + ", ".join("Tensor" for _ in out_names) + ")"
    raw, args = kernel.raw, wl.args

    def shapes_for(tensors):
        dims = library.infer_dims(workload, {n: np.empty(t.shape, dtype=np.float32) for n, t in tensors.items()}, {})
        return dims, wl.out_shapes(library.Shape(tuple((d, dims[d]) for d in wl.shape_dims)))

    cache = {}

    def _impl(*tensors_and_scalars):
        tensors = dict(zip(in_names, tensors_and_scalars[:len(in_names)]))
        scalars = dict(zip(scalar_names, tensors_and_scalars[len(in_names):]))
        key = tuple(tuple(t.shape) for t in tensors.values())
        if key not in cache:
            cache[key] = shapes_for(tensors)
        dims, shapes = cache[key]
        tensors = {n: t if t.is_contiguous() and t.dtype == torch.float32 else t.contiguous().float()
                   for n, t in tensors.items()}
        outs = {n: torch.empty(shapes[n], dtype=torch.float32) for n in out_names}
        values = []
        for a in args:
            if a.kind == "in":
                values.append(tensors[a.name].data_ptr())
            elif a.kind == "out":
                values.append(outs[a.name].data_ptr())
            elif a.kind == "dim":
                values.append(dims[a.name])
            else:
                values.append(float(scalars.get(a.name, 0.0)))
        raw(*values)
        return outs[out_names[0]] if len(out_names) == 1 else tuple(outs[n] for n in out_names)

    def _fake(*tensors_and_scalars):
        tensors = dict(zip(in_names, tensors_and_scalars[:len(in_names)]))
        _, shapes = shapes_for(tensors)
        made = [tensors_and_scalars[0].new_empty(shapes[n]) for n in out_names]
        return made[0] if len(made) == 1 else tuple(made)

    return define_op(name, f"({params}) -> {returns}", _impl, _fake)
