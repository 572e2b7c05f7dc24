"""Peers: what a user would deploy instead of an engine, as baseline factories.

Each factory follows :class:`kernels.spec.Baseline`'s contract,
``factory(inputs, outputs, dims, **options) -> call``: it prepares once (builds the model,
exports, compiles, binds buffers) and returns the zero-argument call that is timed, which
MUST write the preallocated outputs. All peers get the same weights and the same inputs and
use the same thread count.

- ``inputs``: ``x`` (and for decode ``kv``) as float32 arrays, laid out as in
  :mod:`kernels.models.decoder`; optionally weights, by Hugging Face name or with the dots as
  underscores, possibly prefixed (``p_phase_lm_model_layers_0_self_attn_q_proj_weight``, as
  the own-ops capture names them), which replace the model's own.
- ``outputs``: ``logits`` and ``kv`` (prefill) or ``logits`` and ``kv_new`` (decode); the
  own-ops names ``out0``, ``out1`` are accepted too.
- ``dims``: unused (the arrays' shapes are the static shapes).
- ``options``: ``phase`` (``prefill``/``decode``), ``config`` (a :class:`DecoderConfig` as
  JSON) or ``checkpoint`` (a local checkpoint directory), and ``threads`` (default: torch's
  thread count, which the harness's baseline process sets to the evaluation's).

**Where the exports happen.** The ONNX file (which OpenVINO reads too) is made by torch's
dynamo-based exporter (``torch.onnx.export(..., dynamo=True)``, onnxscript underneath; the
TorchScript exporter is deprecated in torch 2.13) from our own module — the built-in family
is trusted code, so exporting it in a trusted process is allowed. :func:`export_onnx` is
meant to be called there beforehand; it caches the file under ``cache_dir()/models/onnx/
<digest>/`` keyed by the content (config, phase, shapes, every weight's bytes, the exporter's
versions), so a factory in the timing child finds it and only loads it. Nothing touches the
network: the exporter, ONNX Runtime and OpenVINO read and write local files only.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import warnings
from pathlib import Path

import numpy as np

from kernels.spec import Baseline

PHASE_IO = {
    "prefill": (("x",), ("logits", "kv")),
    "decode": (("x", "kv"), ("logits", "kv_new")),
}
# name -> (factory, the module it needs, strong). One line per peer.
PEERS = {
    "torch_eager": ("kernels.models.peers:torch_eager", "torch", True),
    "torch_compile": ("kernels.models.peers:torch_compiled", "torch", True),
    "onnxruntime": ("kernels.models.peers:onnxruntime_peer", "onnxruntime", True),
    "openvino": ("kernels.models.peers:openvino_peer", "openvino", True),
}
DESCRIPTIONS = {
    "torch_eager": "the model in torch eager (inference mode)",
    "torch_compile": "torch.compile (inductor, static shapes)",
    "onnxruntime": "ONNX Runtime, CPU execution provider, all graph optimisations",
    "openvino": "OpenVINO CPU plugin from the same ONNX file, f32 precision, latency hint",
}


class PeerUnavailable(RuntimeError):
    """A peer whose runtime does not import here; the message says which and why."""


class PeerMismatch(RuntimeError):
    """A peer that computes something other than the model at these shapes: it is not timed
    (a fast wrong answer is no baseline). The message gives the output and the error."""


# Gross-miscompute guard, not the harness's tolerance: float32 reorderings across 4 layers
# stay far below it, a wrong kernel lands far above it (OpenVINO 2026.4.1's GQA prefill at
# seq == heads is off by ~1.5 on logits of RMS ~2; see docs/engine.md).
CHECK_RTOL = 1e-3


def baselines(phase: str, *, config=None, checkpoint=None) -> tuple[Baseline, ...]:
    """The peers as :class:`Baseline` entries for a workload's baselines (torch.compile is
    ``default=False``: it takes seconds to prepare, as for the other workloads)."""
    if phase not in PHASE_IO:
        raise ValueError(f"phase must be one of {', '.join(PHASE_IO)}, got {phase!r}")
    options = {"phase": phase}
    if checkpoint is not None:
        options["checkpoint"] = str(checkpoint)
    else:
        options["config"] = config.to_json()
    return tuple(Baseline(name=name, fn=fn, strong=strong, requires=requires, default=name != "torch_compile",
                          description=DESCRIPTIONS[name], options=dict(options))
                 for name, (fn, requires, strong) in PEERS.items())


# --------------------------------------------------------------------------- shared preparation

def model_from(options: dict, inputs: dict | None = None):
    """The float32 :class:`DecoderLM` the options name, with any weights found in ``inputs``."""
    import torch

    from kernels.models.decoder import DecoderConfig, DecoderLM
    if options.get("checkpoint"):
        from kernels.models.checkpoint import load_checkpoint
        lm = load_checkpoint(options["checkpoint"])
    elif options.get("config"):
        lm = DecoderLM(DecoderConfig(**options["config"])).eval()
    else:
        raise ValueError("a peer needs options['config'] or options['checkpoint']")
    if inputs:
        with torch.no_grad():
            for name, p in lm.state_dict().items():
                key = _weight_input(name, inputs)
                if key is not None:
                    p.copy_(torch.from_numpy(np.ascontiguousarray(inputs[key])).reshape(p.shape))
    return lm


def _weight_input(name: str, inputs: dict) -> str | None:
    """The input that carries weight ``name``: the name itself, or it with dots as
    underscores, alone or after a prefix ending in ``_`` (the own-ops capture names a
    parameter ``p_<module path>``: ``p_phase_lm_model_norm_weight``)."""
    flat = name.replace(".", "_")
    for key in (name, flat):
        if key in inputs:
            return key
    hits = [k for k in inputs if k.endswith("_" + flat)]
    return hits[0] if len(hits) == 1 else None


def phase_module(lm, phase: str):
    from kernels.models.decoder import Decode, Prefill
    if phase not in PHASE_IO:
        raise ValueError(f"phase must be one of {', '.join(PHASE_IO)}, got {phase!r}")
    return (Prefill if phase == "prefill" else Decode)(lm).eval()


def bind(phase: str, inputs: dict, outputs: dict) -> tuple[list, list]:
    """The phase's input and output arrays in call order, by name (or out0, out1)."""
    in_names, out_names = PHASE_IO[phase]
    missing = [n for n in in_names if n not in inputs]
    if missing:
        raise ValueError(f"{phase} needs input(s) {', '.join(missing)}; got {', '.join(sorted(inputs))}")
    if all(n in outputs for n in out_names):
        outs = [outputs[n] for n in out_names]
    elif all(f"out{k}" in outputs for k in range(len(out_names))):
        outs = [outputs[f"out{k}"] for k in range(len(out_names))]
    else:
        raise ValueError(f"{phase} writes {', '.join(out_names)} (or out0, out1); got {', '.join(sorted(outputs))}")
    return [inputs[n] for n in in_names], outs


def _threads(options: dict) -> int:
    import torch
    return int(options.get("threads") or torch.get_num_threads())


def _tensors(arrays):
    import torch
    with warnings.catch_warnings():
        # The harness maps inputs read-only; torch warns but only reads them.
        warnings.simplefilter("ignore", UserWarning)
        return [torch.from_numpy(a) for a in arrays]


def _prepare(inputs, outputs, options):
    phase = options.get("phase", "prefill")
    ins, outs = bind(phase, inputs, outputs)
    lm = model_from(options, inputs)
    return phase, lm, ins, outs


def checked(name: str, call, lm, phase: str, ins, outs):
    """Run ``call`` once and compare what it wrote with the eager model on the same inputs;
    raise :class:`PeerMismatch` past ``CHECK_RTOL`` of the output's largest magnitude."""
    import torch
    call()
    with torch.inference_mode():
        want = phase_module(lm, phase)(*_tensors(ins))
    for out_name, got, ref in zip(PHASE_IO[phase][1], outs, want):
        ref = ref.numpy()
        err = float(np.abs(got - ref).max()) if np.isfinite(got).all() else float("inf")
        if not err <= CHECK_RTOL * max(1.0, float(np.abs(ref).max())):
            raise PeerMismatch(f"{name} computes a different {out_name} from the model at input shapes "
                               f"{[list(a.shape) for a in ins]} (max error {err:.3g}); not timed")
    return call


# --------------------------------------------------------------------------- torch

def _torch_call(fn, ins, outs):
    import torch
    tins, touts = _tensors(ins), _tensors(outs)

    def call():
        with torch.inference_mode():
            for dst, src in zip(touts, fn(*tins)):
                dst.copy_(src)
    return call


def torch_eager(inputs, outputs, dims, **options):
    """The model as a user runs it: eager, inference mode, outputs copied into place."""
    import torch
    if options.get("threads"):
        torch.set_num_threads(int(options["threads"]))
    phase, lm, ins, outs = _prepare(inputs, outputs, options)
    return _torch_call(phase_module(lm, phase), ins, outs)


def torch_compiled(inputs, outputs, dims, **options):
    """``torch.compile`` (inductor, default mode, static shapes); compiled here, not in the
    first timed call."""
    import torch
    if options.get("threads"):
        torch.set_num_threads(int(options["threads"]))
    phase, lm, ins, outs = _prepare(inputs, outputs, options)
    call = _torch_call(torch.compile(phase_module(lm, phase), dynamic=False), ins, outs)
    return checked("torch.compile", call, lm, phase, ins, outs)   # compiles now, not in a timed call


# --------------------------------------------------------------------------- ONNX export (cached)

def digest(lm, phase: str, shapes) -> str:
    """Content key of an export: config, phase, input shapes, every weight, the exporter."""
    import onnxscript
    import torch
    h = hashlib.sha256()
    head = {"config": lm.cfg.to_json(), "phase": phase, "shapes": [list(s) for s in shapes],
            "torch": torch.__version__, "onnxscript": onnxscript.__version__, "format": 1}
    h.update(json.dumps(head, sort_keys=True).encode())
    for name, t in lm.state_dict().items():
        h.update(f"{name}{tuple(t.shape)}{t.dtype}".encode())
        h.update(t.detach().contiguous().numpy().tobytes())
    return h.hexdigest()


def export_onnx(lm, phase: str, shapes, *, cache: Path | None = None) -> Path:
    """The ONNX file of ``lm``'s ``phase`` at the static input ``shapes`` (one per input, in
    call order), exported once and cached by :func:`digest`. Trusted code only: it runs
    ``torch.export`` on the module."""
    import torch

    from kernels.targets.base import cache_dir
    root = Path(cache or cache_dir()) / "models" / "onnx"
    final = root / digest(lm, phase, shapes)
    path = final / "model.onnx"
    if path.is_file():
        return path
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".export-", dir=root))
    try:
        in_names, out_names = PHASE_IO[phase]
        args = tuple(torch.zeros(tuple(s), dtype=torch.float32) for s in shapes)
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")   # the exporter's notes on torchvision and treespecs
            program = torch.onnx.export(phase_module(lm, phase), args, dynamo=True, input_names=list(in_names),
                                        output_names=list(out_names), optimize=True, verbose=False)
        # Weights beside the graph: the 2 GiB protobuf limit never applies, and OpenVINO and
        # ONNX Runtime both read external data from the same folder.
        program.save(str(work / "model.onnx"), external_data=True)
        try:
            os.replace(work, final)   # atomic: a reader sees a whole export or none
        except OSError:
            if not path.is_file():    # not another process's finished export
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return path


def _onnx_for(phase, lm, ins) -> Path:
    return export_onnx(lm, phase, [a.shape for a in ins])


# --------------------------------------------------------------------------- ONNX Runtime

def onnxruntime_peer(inputs, outputs, dims, **options):
    """ONNX Runtime on the CPU execution provider with every graph optimisation, sequential
    execution, ``threads`` intra-op threads; inputs and outputs bound to the caller's buffers
    (no copies: what a serving loop with IO binding does)."""
    try:
        import onnxruntime as ort
    except ImportError as exc:
        raise PeerUnavailable(f"onnxruntime does not import here: {exc}") from None
    phase, lm, ins, outs = _prepare(inputs, outputs, options)
    path = _onnx_for(phase, lm, ins)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.intra_op_num_threads = _threads(options)
    so.inter_op_num_threads = 1
    session = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    binding = session.io_binding()
    in_names, out_names = PHASE_IO[phase]
    for name, a in zip(in_names, ins):
        # An OrtValue over the caller's memory: each call reads what the buffer holds then.
        binding.bind_ortvalue_input(name, ort.OrtValue.ortvalue_from_numpy(_contiguous(a)))
    for name, a in zip(out_names, outs):
        binding.bind_output(name, "cpu", 0, np.float32, list(a.shape), _contiguous(a).ctypes.data)

    def call(_keep=(ins, outs)):   # the bound OrtValues point into these arrays
        session.run_with_iobinding(binding)
    return checked("onnxruntime", call, lm, phase, ins, outs)


def _writable_alias(a):
    """The same memory as a writable array. ``ov.Tensor(shared_memory=True)`` refuses a
    read-only array (the harness maps inputs read-only) although inference only reads its
    inputs; a copy per call would add ~1 ms for a 1024-row KV cache to OpenVINO's time."""
    if a.flags["WRITEABLE"]:
        return a
    import ctypes
    return np.ctypeslib.as_array((ctypes.c_float * a.size).from_address(a.ctypes.data)).reshape(a.shape)


def _contiguous(a):
    if not (a.dtype == np.float32 and a.flags["C_CONTIGUOUS"]):
        raise ValueError(f"peers bind float32 C-contiguous buffers, got {a.dtype} {a.strides}")
    return a


# --------------------------------------------------------------------------- OpenVINO

def openvino_peer(inputs, outputs, dims, **options):
    """OpenVINO's CPU plugin on the same ONNX file: f32 inference precision (on a CPU with
    bf16 it would otherwise pick bf16 and compute something else), the latency hint, one
    stream of ``threads`` threads; tensors share the caller's buffers."""
    try:
        import openvino as ov
    except ImportError as exc:
        raise PeerUnavailable(f"openvino does not import here: {exc}") from None
    phase, lm, ins, outs = _prepare(inputs, outputs, options)
    path = _onnx_for(phase, lm, ins)
    core = ov.Core()
    compiled = core.compile_model(core.read_model(str(path)), "CPU", {
        "INFERENCE_PRECISION_HINT": "f32", "PERFORMANCE_HINT": "LATENCY",
        "INFERENCE_NUM_THREADS": _threads(options), "NUM_STREAMS": 1,
    })
    request = compiled.create_infer_request()
    for k, a in enumerate(ins):
        request.set_input_tensor(k, ov.Tensor(_writable_alias(_contiguous(a)), shared_memory=True))
    for k, a in enumerate(outs):
        request.set_output_tensor(k, ov.Tensor(_contiguous(a), shared_memory=True))

    def call(_keep=(ins, outs)):   # the aliases above do not hold the arrays alive; this does
        request.infer()
    return checked("openvino", call, lm, phase, ins, outs)
