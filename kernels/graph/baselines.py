"""What the user would run instead of an imported problem's kernel: their own model.

These factories run USER CODE: only ever inside the harness's timing child (sandboxed),
never in a process that computes a workload's reference. The model is rebuilt from the
stored problem file (with the shape's constant overrides) under the same seed as the
capture, and then given the stored weights, so it computes what was captured. Each call
runs ``forward`` on the preallocated input tensors (as a user would; torch allocates its
own outputs) and copies the results into the harness's output buffers.
"""
from __future__ import annotations

import os
from pathlib import Path

from kernels.graph import problem, store


_FILES: dict[str, tuple[dict, str]] = {}


def warm(**options) -> None:
    """Before the baseline's process is isolated (trusted code only): read the stored problem
    and its metadata (the box user may not read the store), and load what torch and Inductor
    import lazily (after the drop, the interpreter's own files may be out of reach)."""
    import torch
    path = Path(options["dir"])
    _FILES[str(path)] = (store.read_meta(path), (path / "problem.py").read_text(encoding="utf-8"))
    with torch.no_grad():
        torch.nn.functional.gelu(torch.nn.Linear(4, 4)(torch.ones(2, 4)))
        if options.get("compile"):
            _shared_compile_cache(path)
            _python_headers_within_reach()
            torch.compile(lambda t: torch.nn.functional.gelu(t) * 2.0, dynamic=False)(torch.ones(4))


def _shared_compile_cache(path: Path) -> None:
    """One Inductor cache per imported problem, kept across timing sessions: compiling a model
    costs tens of seconds, and every session is a fresh process of a fresh box user. Shared
    only by sessions of the same stored problem (the same code), so what one session writes
    there can only ever meet the model that wrote it."""
    from kernels.targets.base import cache_dir
    folder = cache_dir() / "inductor" / path.name
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o1777)
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(folder)
    os.umask(0o000)   # what the box users create there, the next one may extend


def _python_headers_within_reach() -> None:
    """Inductor compiles C++ against Python.h; after the drop the interpreter's own include
    folder may be out of the box user's reach (under root's home), so a copy goes into the
    process's own home and sysconfig points there."""
    import shutil
    import sysconfig
    include = sysconfig.get_path("include")
    home = os.environ.get("HOME", "")
    if not include or not home or _reachable(include):
        return
    copy = os.path.join(home, "python-include")
    if not os.path.isdir(copy):
        shutil.copytree(include, copy)
    original = sysconfig.get_path

    def get_path(name, *args, **kw):
        return copy if name in ("include", "platinclude") else original(name, *args, **kw)
    sysconfig.get_path = get_path


def _reachable(path: str) -> bool:
    """Whether every folder above ``path`` may be searched by anyone (o+x)."""
    p = os.path.abspath(path)
    while p != "/":
        if not os.stat(p).st_mode & 0o001:
            return False
        p = os.path.dirname(p)
    return True


def _model(options: dict, dims: dict):
    import random

    import numpy as np
    import torch

    path = Path(options["dir"])
    meta, text = _FILES.get(str(path)) or (store.read_meta(path), (path / "problem.py").read_text(encoding="utf-8"))
    k = next((i for i, s in enumerate(meta["shapes"]) if {d: s["dims"][d] for d in meta["dims"]} == dict(dims)), None)
    if k is None:
        raise ValueError(f"{meta['name']} has no captured shape {dims}")
    shape = meta["shapes"][k]
    source = problem.with_overrides(text, shape["overrides"])
    ns = {"__name__": "problem", "__file__": "problem.py"}
    # dont_inherit: this module's ``from __future__ import annotations`` must not leak into the
    # user's file (a dataclass with string annotations cannot be built outside sys.modules:
    # the decoder family's problem files failed here while their capture, compiled alike, worked)
    exec(compile(source, "problem.py", "exec", dont_inherit=True), ns)   # the user's code: timing child only
    torch.manual_seed(meta["init_seed"])
    random.seed(meta["init_seed"])
    np.random.seed(meta["init_seed"])
    model = ns["Model"](*list(ns["get_init_inputs"]() or [])).eval()
    return model, meta, shape


def _prepare(inputs, outputs, dims, options):
    import numpy as np
    import torch
    model, meta, shape = _model(options, dims)
    with torch.no_grad():
        for name, source in shape["weights"].items():
            target = _tensor_of(model, source)
            if target is not None and name in inputs:
                target.copy_(torch.from_numpy(inputs[name]).reshape(target.shape))
    # Writable copies, made once: the harness maps its inputs read-only, and a user's forward
    # may work in place on its arguments.
    args = [torch.from_numpy(np.array(inputs[c["input"]])) if "input" in c else c["scalar"] for c in meta["call"]]
    outs = [torch.from_numpy(outputs[f"out{k}"]) for k in range(len(outputs))]
    return model, args, outs


def _tensor_of(model, source: str):
    for getter in (model.get_parameter, model.get_buffer):
        try:
            return getter(source)
        except (AttributeError, KeyError):
            continue
    return None


def _flatten(out):
    import torch
    if isinstance(out, torch.Tensor):
        return [out]
    return [t for o in out for t in _flatten(o)]


def _caller(fn, args, outs):
    import torch

    def call():
        with torch.no_grad():
            for dst, src in zip(outs, _flatten(fn(*args))):
                dst.copy_(src.reshape(dst.shape))
    return call


def torch_eager(inputs, outputs, dims, **options):
    model, args, outs = _prepare(inputs, outputs, dims, options)
    return _caller(model, args, outs)


def torch_compiled(inputs, outputs, dims, **options):
    import torch
    model, args, outs = _prepare(inputs, outputs, dims, options)
    fn = torch.compile(model, dynamic=False)
    call = _caller(fn, args, outs)
    call()   # compile now, not in the first timed call
    return call
