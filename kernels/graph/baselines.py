"""What the user would run instead of an imported problem's kernel: their own model.

These factories run USER CODE: only ever inside the harness's timing child (sandboxed),
never in a process that computes a workload's reference. The model is rebuilt from the
stored problem file (with the shape's constant overrides) under the same seed as the
capture, and then given the stored weights, so it computes what was captured. Each call
runs ``forward`` on the preallocated input tensors (as a user would; torch allocates its
own outputs) and copies the results into the harness's output buffers.
"""
from __future__ import annotations

from pathlib import Path

from kernels.graph import problem, store


def _model(options: dict, dims: dict):
    import random

    import numpy as np
    import torch

    path = Path(options["dir"])
    meta = store.read_meta(path)
    k = next((i for i, s in enumerate(meta["shapes"]) if {d: s["dims"][d] for d in meta["dims"]} == dict(dims)), None)
    if k is None:
        raise ValueError(f"{meta['name']} has no captured shape {dims}")
    shape = meta["shapes"][k]
    source = problem.with_overrides((path / "problem.py").read_text(encoding="utf-8"), shape["overrides"])
    ns = {"__name__": "problem", "__file__": "problem.py"}
    exec(compile(source, "problem.py", "exec"), ns)   # the user's code: timing child only
    torch.manual_seed(meta["init_seed"])
    random.seed(meta["init_seed"])
    np.random.seed(meta["init_seed"])
    model = ns["Model"](*list(ns["get_init_inputs"]() or [])).eval()
    return model, meta, shape


def _prepare(inputs, outputs, dims, options):
    import torch
    model, meta, shape = _model(options, dims)
    with torch.no_grad():
        for name, source in shape["weights"].items():
            target = _tensor_of(model, source)
            if target is not None and name in inputs:
                target.copy_(torch.from_numpy(inputs[name]).reshape(target.shape))
    args = [torch.from_numpy(inputs[c["input"]]) if "input" in c else c["scalar"] for c in meta["call"]]
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
