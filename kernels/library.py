"""The kernel library on disk, and promoted kernels callable from plain Python.

    from kernels import library
    softmax = library.load("softmax", "cpu")
    y = softmax(x)                      # x: a float32 NumPy array (rows, cols)

``load`` returns the champion for (workload, target) — per shape bucket when there are
several — and every call runs it THROUGH THE HARNESS (``kernels.harness.call``): static
checks, the cached compile, the binary audit, and a fresh sandbox child. Kernel code is
never loaded into the caller's process. A call costs a child process (milliseconds from the
fork server) plus the copy of the arrays through files: this is for trusted use of
untrusted code, not for a hot loop.

Layout (written by the web app's promotion service, read here; no database needed):

    <root>/<workload>/<target>/v0003/kernel.c      (kernel.cu for CUDA)
    <root>/<workload>/<target>/v0003/manifest.json
    <root>/<workload>/<target>/champions.json     {"2^8x2^10": "v0003", ...}

``root`` is ``INT21_LIBRARY_DIR``, else ``$INT21_VAR_DIR/library``, else ``var/library``
in the repository.

Engines (docs/engine.md) are promoted as one unit, each version a folder of its own:

    <root>/_engines/<name>/v0002/<phase>.c        one per phase (prefill.c, decode.c)
    <root>/_engines/<name>/v0002/weights.bin      float32, every phase's weights (manifest: layout)
    <root>/_engines/<name>/v0002/manifest.json
    <root>/_engines/<name>/current.json           {"version": "v0002"}

(``_engines`` cannot be a workload's name.) ``load_engine(name)`` returns the approved
engine loaded IN-PROCESS (:mod:`kernels.engine.native`): approval is the trust boundary, and
only the bytes whose digests the reviewers approved are built and loaded.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import tempfile
from pathlib import Path
from typing import Mapping

import numpy as np

from kernels import workloads
from kernels.spec import Shape

SOURCE_FILES = {"cpu": "kernel.c", "cuda": "kernel.cu"}


class LibraryError(LookupError):
    """No such kernel in the library, or a library folder that does not check out."""


def library_dir(root: str | Path | None = None) -> Path:
    if root:
        return Path(root)
    if os.environ.get("INT21_LIBRARY_DIR"):
        return Path(os.environ["INT21_LIBRARY_DIR"])
    if os.environ.get("INT21_VAR_DIR"):
        return Path(os.environ["INT21_VAR_DIR"]) / "library"
    return Path(__file__).resolve().parents[1] / "var" / "library"


def shape_bucket(dims: Mapping[str, int] | Shape) -> str:
    """The same buckets as the swarm's lessons (``swarm.knowledge.shape_bucket``): each dim
    rounded to a power of two, e.g. 256x1000 → ``2^8x2^10``."""
    items = dims.dims if isinstance(dims, Shape) else dims.items()
    return "x".join(f"2^{round(math.log2(max(v, 1)))}" for _, v in items)


def bucket_distance(a: str, b: str) -> float:
    pa, pb = a.split("x"), b.split("x")
    if len(pa) != len(pb):
        return math.inf
    return sum(abs(int(x[2:]) - int(y[2:])) for x, y in zip(pa, pb))


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# --------------------------------------------------------------------------- writing

def version_name(version: int) -> str:
    return f"v{version:04d}"


def write_version(manifest: dict, source: str, root: str | Path | None = None) -> Path:
    """Write one promoted version (its source and manifest), atomically: a half-written
    folder is never visible under its final name. Returns the folder."""
    folder = library_dir(root) / manifest["workload"] / manifest["target"]
    folder.mkdir(parents=True, exist_ok=True)
    final = folder / version_name(manifest["version"])
    tmp = Path(tempfile.mkdtemp(prefix=".incoming-", dir=folder))
    (tmp / SOURCE_FILES[manifest["target"]]).write_text(source)
    (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True, default=str))
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)
    return final


def set_champion(workload: str, target: str, bucket: str, version: int, root: str | Path | None = None) -> None:
    folder = library_dir(root) / workload / target
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "champions.json"
    current = json.loads(path.read_text()) if path.exists() else {}
    current[bucket] = version_name(version)
    tmp = folder / f".champions-{os.getpid()}.json"
    tmp.write_text(json.dumps(current, indent=2, sort_keys=True))
    os.replace(tmp, path)


ENGINES = "_engines"


def engine_folder(name: str, root: str | Path | None = None) -> Path:
    return library_dir(root) / ENGINES / name


def write_engine_version(manifest: dict, sources: dict, weights: bytes, root: str | Path | None = None) -> Path:
    """Write one promoted engine version (a source per phase, the weights, the manifest)
    atomically, then point ``current.json`` at it. Returns the version's folder."""
    folder = engine_folder(manifest["engine"], root)
    folder.mkdir(parents=True, exist_ok=True)
    final = folder / version_name(manifest["version"])
    tmp = Path(tempfile.mkdtemp(prefix=".incoming-", dir=folder))
    for phase, source in sources.items():
        (tmp / manifest["phases"][phase]["source_file"]).write_text(source)
    (tmp / manifest["weights"]["file"]).write_bytes(weights)
    (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True, default=str))
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)
    pointer = folder / f".current-{os.getpid()}.json"
    pointer.write_text(json.dumps({"version": version_name(manifest["version"])}))
    os.replace(pointer, folder / "current.json")
    return final


def engine_files(name: str, version: int | None = None, root: str | Path | None = None) -> tuple[dict, dict, bytes]:
    """(manifest, {phase: source}, weights bytes) of an engine version (the current one by
    default), as they are on disk: NOT checked here (``kernels.engine.native`` checks them
    against the manifest before anything is built). Raises :class:`LibraryError`."""
    folder = engine_folder(name, root)
    try:
        vname = version_name(version) if version else json.loads((folder / "current.json").read_text())["version"]
        manifest = json.loads((folder / vname / "manifest.json").read_text())
        sources = {phase: (folder / vname / info["source_file"]).read_text()
                   for phase, info in manifest["phases"].items()}
        weights = (folder / vname / manifest["weights"]["file"]).read_bytes()
    except FileNotFoundError as exc:
        raise LibraryError(f"no promoted engine {name!r}{f' v{version}' if version else ''} in {library_dir(root)} "
                           f"({Path(exc.filename).name} is missing)") from None
    except (KeyError, TypeError, ValueError) as exc:
        raise LibraryError(f"{folder}: the engine's manifest does not read ({type(exc).__name__}: {exc})") from None
    return manifest, sources, weights


def load_engine(name: str, version: int | None = None, *, root: str | Path | None = None):
    """The approved engine ``name`` (its current version, or ``version``), loaded into this
    process: ``eng.prefill(tokens)`` → (logits, kv), ``eng.decode(token, kv)`` → (logits,
    kv rows); see :class:`kernels.engine.native.NativeEngine`. Raises :class:`LibraryError`
    when there is none or when its files do not match what was approved."""
    from kernels.engine import native
    return native.load_engine(name, version, root=root)


# --------------------------------------------------------------------------- reading

def champions(workload: str, target: str, root: str | Path | None = None) -> dict[str, dict]:
    """bucket → manifest of its champion (the source is checked against the manifest)."""
    folder = library_dir(root) / workload / target
    path = folder / "champions.json"
    if not path.exists():
        return {}
    out = {}
    for bucket, vname in json.loads(path.read_text()).items():
        manifest = json.loads((folder / vname / "manifest.json").read_text())
        source = (folder / vname / SOURCE_FILES[target]).read_text()
        if sha256(source) != manifest.get("source_sha256"):
            raise LibraryError(f"{folder / vname}: the kernel source does not match its manifest's digest")
        out[bucket] = {**manifest, "source": source}
    return out


def load(workload: str, target: str = "cpu", shape_bucket: str | None = None, *,
         root: str | Path | None = None) -> "LibraryKernel":
    """The champion kernel for (workload, target) as a callable on NumPy arrays. With
    ``shape_bucket`` the champion of that bucket; without, each call uses the champion of
    the nearest bucket to the arrays it gets. Raises :class:`LibraryError` when there is none."""
    workloads.get(workload)   # an unknown workload is a SpecError naming the built-in ones
    found = champions(workload, target, root)
    if not found:
        raise LibraryError(f"no promoted {workload} kernel for {target} in {library_dir(root)}")
    if shape_bucket is not None:
        if shape_bucket not in found:
            raise LibraryError(f"no {workload} champion on {target} for shape bucket {shape_bucket}; "
                               f"there are: {', '.join(sorted(found))}")
        found = {shape_bucket: found[shape_bucket]}
    return LibraryKernel(workload, target, found)


class LibraryKernel:
    """Call with the workload's inputs, positionally in ABI order or by name, plus its f32
    scalars by name (e.g. ``eps``). Dims come from the arrays' shapes (or pass them by
    name). Returns the output array, or a dict of them when the workload has several."""

    def __init__(self, workload: str, target: str, versions: dict[str, dict]):
        self.workload, self.target = workload, target
        self.versions = versions
        self._wl = workloads.get(workload)

    @property
    def manifest(self) -> dict:
        """The manifest of the champion (the first one when there are several buckets)."""
        return next(iter(self.versions.values()))

    def __repr__(self) -> str:
        tags = ", ".join(f"{b}: v{m['version']}" for b, m in self.versions.items())
        return f"<LibraryKernel {self.workload} on {self.target} ({tags})>"

    def choose(self, dims: Mapping[str, int]) -> dict:
        bucket = shape_bucket({d: dims[d] for d in self._wl.shape_dims})
        return min(self.versions.items(), key=lambda kv: (bucket_distance(kv[0], bucket), -kv[1]["version"]))[1]

    def __call__(self, *args, **named):
        from kernels.harness.call import call_kernel
        wl = self._wl
        in_names = wl.input_names()
        scalar_names = [a.name for a in wl.args if a.kind == "f32"]
        if len(args) > len(in_names):
            raise TypeError(f"{self.workload} takes {len(in_names)} arrays ({', '.join(in_names)}), got {len(args)}")
        arrays = dict(zip(in_names, args))
        for name in list(named):
            if name in in_names:
                if name in arrays:
                    raise TypeError(f"{name} given twice")
                arrays[name] = named.pop(name)
        missing = [n for n in in_names if n not in arrays] + [n for n in scalar_names if n not in named]
        if missing:
            raise TypeError(f"{self.workload} needs {', '.join(missing)}")
        scalars = {n: float(named.pop(n)) for n in scalar_names}
        given_dims = {d: int(named.pop(d)) for d in list(named) if d in wl.shape_dims}
        if named:
            raise TypeError(f"unexpected arguments: {', '.join(named)}")
        arrays = {n: np.asarray(a) for n, a in arrays.items()}
        dims = infer_dims(self.workload, arrays, given_dims)
        chosen = self.choose(dims)
        outs = call_kernel(chosen["source"], chosen["params"], self.workload, self.target,
                           arrays=arrays, dims=dims, scalars=scalars)
        return outs[wl.output_names()[0]] if len(outs) == 1 else outs


_PROBE = (2, 3, 5, 7, 11, 13, 17, 19)


def infer_dims(workload: str, arrays: Mapping[str, np.ndarray], given: Mapping[str, int] | None = None) -> dict:
    """The shape dims from the input arrays: a probe with a distinct prime per dim shows
    which axis of which input carries which dim. Explicit ``given`` values win, and must
    agree with the arrays."""
    wl = workloads.get(workload)
    probe = Shape(tuple(zip(wl.shape_dims, _PROBE)))
    sample = wl.make_inputs(probe, wl.distributions[0], 0)
    by_size = dict(zip(_PROBE, wl.shape_dims))
    dims = dict(given or {})
    for name, arr in arrays.items():
        want = np.shape(sample[name])
        if arr.ndim != len(want):
            raise ValueError(f"{name} must have {len(want)} dimensions "
                             f"({' x '.join(by_size.get(v, '?') for v in want)}), got shape {arr.shape}")
        for axis, size in enumerate(want):
            dim = by_size.get(size)
            if dim is None:
                continue
            if dims.setdefault(dim, arr.shape[axis]) != arr.shape[axis]:
                raise ValueError(f"{name} axis {axis} is {arr.shape[axis]} but {dim} is {dims[dim]}")
    missing = [d for d in wl.shape_dims if d not in dims]
    if missing:
        raise ValueError(f"cannot tell {', '.join(missing)} from the arrays; pass {missing[0]}=... by name")
    expected = wl.out_shapes(Shape(tuple((d, dims[d]) for d in wl.shape_dims)))
    if any(min(s) < 1 for s in expected.values() if len(s)):
        raise ValueError("empty arrays")
    return dims
