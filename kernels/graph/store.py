"""Imported problems on disk, content-addressed.

    <root>/<digest>/problem.py            the user's file, as given
    <root>/<digest>/meta.json             name, shapes, dims, inputs, tolerance, stress, space, groups…
    <root>/<digest>/shapes/<k>/graph.json the captured IR at shape k
    <root>/<digest>/shapes/<k>/params.npz its weights and folded constants (float32, no pickle)
    <root>/<digest>/kernel.c              the generated source (the workload's seed template)
    <root>/index.json                     {name: digest}: the latest import under each name

``digest`` hashes the source and the shapes' overrides, so importing the same thing twice
lands in the same folder. ``root`` is ``INT21_OPS_DIR``, else ``$INT21_VAR_DIR/ops``, else
``var/ops`` in the repository. Folders are written under a temporary name and renamed, so a
reader never sees half an import.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import numpy as np

from kernels.graph.ir import Graph

NAME = re.compile(r"^[a-z][a-z0-9_]{0,62}$")


def root(path: str | Path | None = None) -> Path:
    if path:
        return Path(path)
    if os.environ.get("INT21_OPS_DIR"):
        return Path(os.environ["INT21_OPS_DIR"])
    if os.environ.get("INT21_VAR_DIR"):
        return Path(os.environ["INT21_VAR_DIR"]) / "ops"
    return Path(__file__).resolve().parents[2] / "var" / "ops"


def digest(source: str, shapes: list) -> str:
    h = hashlib.sha256(source.encode("utf-8"))
    h.update(json.dumps(shapes, sort_keys=True).encode())
    return h.hexdigest()[:24]


def index(base: Path | None = None) -> dict:
    path = root(base) / "index.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str) and NAME.match(k)}


def lookup(name: str, base: Path | None = None) -> Path | None:
    d = index(base).get(name)
    if d is None or not re.match(r"^[0-9a-f]{24}$", d):
        return None
    path = root(base) / d
    return path if (path / "meta.json").exists() else None


def names(base: Path | None = None) -> list[str]:
    return sorted(n for n in index(base) if lookup(n, base) is not None)


def save(base: Path | None, name: str, dig: str, source: str, meta: dict, shapes: list, kernel: str) -> Path:
    """Write one import (``shapes``: (Graph, params) per shape, in meta's order) and point
    ``name`` at it."""
    top = root(base)
    top.mkdir(parents=True, exist_ok=True)
    final = top / dig
    tmp = Path(tempfile.mkdtemp(prefix=f".{dig}.", dir=top))
    try:
        (tmp / "problem.py").write_text(source, encoding="utf-8")
        for k, (graph, params) in enumerate(shapes):
            d = tmp / "shapes" / str(k)
            d.mkdir(parents=True)
            (d / "graph.json").write_text(graph.dumps())
            np.savez(d / "params.npz", **{n: np.asarray(a, dtype=np.float32, order="C") for n, a in params.items()})
        (tmp / "kernel.c").write_text(kernel)
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1, sort_keys=True, allow_nan=False))
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    data = index(base)
    data[name] = dig
    itmp = top / f".index.{os.getpid()}.tmp"
    itmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    os.replace(itmp, top / "index.json")
    return final


def read_meta(path: Path) -> dict:
    return json.loads((path / "meta.json").read_text())


def read_shape(path: Path, k: int) -> tuple[Graph, dict]:
    d = path / "shapes" / str(int(k))
    graph = Graph.loads((d / "graph.json").read_text())
    with np.load(d / "params.npz", allow_pickle=False) as z:
        params = {n: z[n].astype(np.float32) for n in z.files}
    for t in graph.params:
        if t.name not in params or params[t.name].shape != t.shape:
            raise ValueError(f"stored params of {path.name} shape {k} do not match the graph ({t.name})")
    return graph, params
