"""The table of supported core-ATen targets and the helpers its handlers share.

``HANDLERS`` maps a target's name as torch prints it (``aten.addmm.default``) to a function
``(builder, record, *args, **kwargs) -> Val | None`` that emits the equivalent IR through
:class:`~kernels.graph.translate.Builder`; handlers register themselves with ``@reg`` in
:mod:`aten_pointwise` (elementwise ops, folded constants) and :mod:`aten_tensor`
(reductions, softmax, norms, matmul, attention, views, cat), :mod:`aten_conv`
(convolutions, constant padding, pooling) and :mod:`aten_gather` (indexing at constant
positions, upsampling). Anything not in the table is
refused by name (``UNSUPPORTED_WHY`` words the common families).
"""
from __future__ import annotations

import numpy as np

from kernels.graph.translate import Builder, Unsupported, Val, normalise_dims, torch_shape

HANDLERS: dict = {}

UNSUPPORTED_WHY = {
    "pool": "this pooling is not supported (max and average pooling over 1-3 dims are)",
    "index": "indexing by tensors is supported at positions fixed in the model only (one index tensor)",
    "gather": "gather/scatter are not supported", "scatter": "gather/scatter are not supported",
    "sort": "sorting is not supported", "topk": "top-k is not supported",
    "argmax": "argmax/argmin produce integer tensors, which are not supported",
    "argmin": "argmax/argmin produce integer tensors, which are not supported",
    "embedding": "only embedding lookups at positions fixed in the model are supported (aten.embedding)",
    "pad": "this padding is not supported (constant, reflect and replicate are)",
    "roll": "roll is not supported",
    "upsample": "this upsampling mode is not supported (nearest, linear, bilinear, trilinear are)",
    "interpolate": "this interpolation is not supported",
    "empty": "uninitialised tensors (torch.empty) are not supported",
}


def reg(*targets):
    def deco(fn):
        for t in targets:
            HANDLERS[t] = fn
        return fn
    return deco


def why_unsupported(target: str) -> str:
    low = target.lower()
    for key, why in UNSUPPORTED_WHY.items():
        if key in low:
            return why
    return "it is outside the supported opset (docs/ownops.md lists it)"


# --------------------------------------------------------------------------- helpers

def shape_of(rec) -> tuple:
    got = torch_shape(rec.get("val"), rec["name"])
    if got is None:
        raise Unsupported(f"node {rec['name']}: torch recorded no tensor shape", node=rec["name"])
    return got[0]


def f32(b: Builder, x):
    """Arithmetic operand: bool masks promote to 0/1 floats, as torch does."""
    if isinstance(x, Val) and x.name is not None and x.dtype == "bool":
        return b.op("to_f32", x)
    if isinstance(x, Val) and x.const is not None and x.const.dtype == np.bool_:
        return Val(const=x.const.astype(np.float64))
    return x


def as_bool(b: Builder, x):
    if isinstance(x, Val) and x.name is not None and x.dtype == "f32":
        return b.op("ne", x, 0.0)
    if isinstance(x, Val) and x.const is not None and x.const.dtype != np.bool_:
        return Val(const=x.const != 0)
    return x


def rank(x) -> int:
    if isinstance(x, Val):
        return len(x.shape) if x.name is not None else (x.const.ndim if x.const is not None else 0)
    return 0


def shp(x) -> tuple:
    if isinstance(x, Val) and x.name is not None:
        return x.shape
    if isinstance(x, Val) and x.const is not None:
        return tuple(x.const.shape)
    return ()


def reshape(b: Builder, x, shape):
    shape = list(shape)
    return x if list(shp(x)) == shape else b.op("reshape", x, shape=shape)


def reduce(b: Builder, kind: str, x, dims, keepdim: bool, **attrs):
    x = f32(b, x)
    r = rank(x)
    if r == 0:
        return x
    dims = normalise_dims(dims, r)
    out = b.op(kind, x, dims=dims, **attrs)
    if not keepdim:
        out = reshape(b, out, [s for i, s in enumerate(shp(x)) if i not in dims])
    return out
