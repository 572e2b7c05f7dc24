"""Captured FX records (untrusted data) → our IR, through the trusted table in :mod:`aten`.

The child sends a list of node records (``placeholder`` / ``call_function`` / ``output``)
with their targets as strings, their operands, and the shape and dtype torch inferred for
each. :func:`translate` walks them once:

- placeholders become graph inputs (``USER_INPUT``) or params (weights, buffers, constants);
- each ``call_function`` target is looked up in ``aten.HANDLERS``; an unknown one is a
  :class:`Unsupported` that names the op and the node (nothing is ever guessed);
- a handler emits IR nodes through :class:`Builder`, which folds everything that depends on
  no input (``arange``, ``full``, masks made from them…) into NumPy constants: small ones
  become literals, the rest ``const`` params stored with the weights;
- every result is checked against the shape torch recorded (a mismatch is refused, not
  papered over); dead nodes and unused params are dropped at the end.
"""
from __future__ import annotations

import keyword
import math
import re
from dataclasses import dataclass, field

import numpy as np

from kernels.graph import opset
from kernels.graph.ir import MAX_ELEMENTS, MAX_RANK, NAME, Graph, IRError, Node, Tensor

C_RESERVED = set(keyword.kwlist) | {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum",
    "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return",
    "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void",
    "volatile", "while", "kernel", "main", "bool", "true", "false", "NULL", "int64_t", "size_t", "arena",
    "scratch"}
TORCH_DTYPES = {"torch.float32": "f32", "torch.bool": "bool"}
FOLD_DTYPES = {"torch.float32", "torch.bool", "torch.int64", "torch.int32", "torch.float64"}
MAX_LITERAL_TENSOR = 1   # constants with more distinct values than this become params


class Unsupported(Exception):
    """The graph uses something we do not handle; ``node`` and ``op`` say where and what."""

    def __init__(self, reason: str, *, node: str = "", op: str = "", kind: str = "unsupported"):
        super().__init__(reason)
        self.reason, self.node, self.op, self.kind = reason, node, op, kind


@dataclass
class Val:
    """A value during translation: an IR tensor (``name``), a folded constant (``const``),
    a Python scalar, or a tuple of values (multi-output ops, picked by ``getitem``)."""

    name: str | None = None
    shape: tuple = ()
    dtype: str = "f32"
    const: np.ndarray | None = None
    scalar: object = None
    items: list | None = None
    refused: str | None = None   # a value we cannot represent; using it is refused with this

    @property
    def is_tensor(self) -> bool:
        return self.name is not None or self.const is not None


@dataclass
class Builder:
    """Collects IR nodes and params; folds what depends on no input."""

    nodes: list = field(default_factory=list)
    params: dict = field(default_factory=dict)        # name -> float32 array
    param_roles: dict = field(default_factory=dict)   # name -> (role, source)
    specs: dict = field(default_factory=dict)         # value name -> (shape, dtype)
    origin: str = ""                                  # the FX node being translated
    _count: int = 0

    def fresh(self, hint: str) -> str:
        self._count += 1
        base = re.sub(r"[^A-Za-z0-9_]", "_", hint)[:40] or "t"
        if base[0].isdigit():
            base = f"t_{base}"
        return f"{base}_{self._count}"

    def op(self, op: str, *operands, **attrs) -> Val:
        """Emit ``op`` on ``operands`` (Vals or Python numbers), or fold it to a constant
        when none of them depends on an input."""
        for o in operands:
            if isinstance(o, Val) and o.refused:
                raise Unsupported(o.refused, node=self.origin, op=op)
        if not any(isinstance(o, Val) and o.name is not None for o in operands):
            values = [_plain(o) for o in operands]
            return Val(const=np.asarray(opset.evaluate(op, values, attrs)))
        tensors = [o.shape for o in operands if isinstance(o, Val) and o.name is not None]
        args = []
        for o in operands:
            if isinstance(o, Val) and o.name is not None:
                args.append(o.name)
            else:
                args.append(self._operand(op, _plain(o), tensors))
        specs = [self.specs[a] if isinstance(a, str) else a for a in args]
        try:
            shape, dtype = opset.infer(op, specs, attrs)
        except opset.OpError as exc:
            raise Unsupported(f"cannot translate node {self.origin}: {exc}", node=self.origin, op=op) from None
        if len(shape) > MAX_RANK or math.prod(shape) > MAX_ELEMENTS:
            raise Unsupported(f"node {self.origin}: its {op} would be a tensor of {list(shape)}; at most {MAX_RANK} "
                              f"dims and {MAX_ELEMENTS} elements are supported", node=self.origin, op=op)
        name = self.fresh(self.origin or op)
        self.nodes.append(Node(name, op, tuple(args), tuple(shape), dict(attrs), dtype, self.origin))
        self.specs[name] = (tuple(shape), dtype)
        return Val(name=name, shape=tuple(shape), dtype=dtype)

    def _operand(self, op: str, value, tensor_shapes):
        """A folded constant as an operand: a literal when it is one value that does not
        widen the result, else a ``const`` param (bool masks go in as 0/1 floats)."""
        if value is None:
            raise Unsupported(f"node {self.origin}: an operand is None", node=self.origin, op=op)
        if isinstance(value, (bool, int, float)):
            if opset.family(op) != "pointwise":
                return self.const_param(np.asarray(value, dtype=np.float64)).name
            return value
        arr = np.asarray(value)
        widen = opset.broadcast(arr.shape, *tensor_shapes) != opset.broadcast(*tensor_shapes)
        flat = arr.reshape(-1)
        if opset.family(op) == "pointwise" and not widen and flat.size and (flat == flat[0]).all():
            v = flat[0]
            return bool(v) if arr.dtype == np.bool_ else float(v)
        return self.const_param(arr).name

    def const_param(self, arr: np.ndarray) -> Val:
        """A folded tensor stored beside the weights (role ``const``)."""
        arr = np.asarray(arr)
        data = arr.astype(np.float32)
        if arr.dtype.kind in "iu" and not np.array_equal(data.astype(arr.dtype), arr):
            raise Unsupported(f"node {self.origin}: an integer constant does not fit float32", node=self.origin)
        name = self.fresh("c_fold")
        self.params[name] = np.asarray(data, order="C")   # (ascontiguousarray would make 0-d 1-d)
        self.param_roles[name] = ("const", "folded")
        self.specs[name] = (tuple(data.shape), "f32")
        val = Val(name=name, shape=tuple(data.shape), dtype="f32")
        return self.op("to_bool", val) if arr.dtype == np.bool_ else val

    def tensor(self, v: Val) -> Val:
        """``v`` as an IR tensor (a folded constant becomes a const param)."""
        if v.name is not None:
            return v
        if v.const is not None:
            return self.const_param(v.const)
        raise Unsupported(f"node {self.origin}: expected a tensor operand", node=self.origin)


def _plain(o):
    if isinstance(o, Val):
        if o.const is not None:
            return o.const
        if o.items is not None:
            raise Unsupported("a tuple was used where a tensor was expected")
        return o.scalar
    return o


def c_name(name: str, taken: set) -> str:
    """An ABI name for a placeholder: itself when it is a safe C identifier, else prefixed."""
    base = name if NAME.match(name) else re.sub(r"[^A-Za-z0-9_]", "_", name)[:60] or "arg"
    if base in C_RESERVED or base.startswith(("i21_", "__", "out")) or base[0].isdigit():
        base = f"arg_{base}"
    out, k = base, 1
    while out in taken:
        k += 1
        out = f"{base}_{k}"
    taken.add(out)
    return out


def normalise_dims(dims, rank: int) -> list[int]:
    if dims is None or dims == []:
        return list(range(rank))
    if isinstance(dims, int):
        dims = [dims]
    out = sorted({d % rank if rank else 0 for d in dims})
    return out


def torch_shape(val, origin: str) -> tuple[tuple, str] | None:
    """(shape, dtype) torch recorded for a node, refusing symbolic sizes."""
    if not isinstance(val, dict) or "shape" not in val:
        return None
    shape = val["shape"]
    if not isinstance(shape, list):
        raise Unsupported(f"node {origin}: malformed shape record", node=origin, kind="protocol")
    for d in shape:
        if not isinstance(d, int) or isinstance(d, bool):
            raise Unsupported(f"node {origin} has a dynamic (symbolic) size {d!r}: shapes must be static",
                              node=origin, kind="dynamic")
    if any(d == 0 for d in shape):
        raise Unsupported(f"node {origin} makes an empty tensor {shape}: zero-size tensors are not supported",
                          node=origin)
    return tuple(shape), str(val.get("dtype"))


def finish(builder: Builder, inputs: list[Tensor], outputs: list[str]) -> tuple[Graph, dict]:
    """Drop dead nodes and unused params; the graph and its param arrays."""
    live = set(outputs)
    kept = []
    for n in reversed(builder.nodes):
        if n.name in live:
            kept.append(n)
            live.update(n.refs())
    kept.reverse()
    params = []
    arrays = {}
    for name, (role, source) in builder.param_roles.items():
        if name in live:
            arr = builder.params[name]
            params.append(Tensor(name, tuple(arr.shape), role, source))
            arrays[name] = arr
    graph = Graph(tuple(inputs), tuple(params), tuple(kept), tuple(outputs))
    try:
        graph.validate()
    except IRError as exc:
        raise Unsupported(f"the translated graph does not check out: {exc}", kind="internal") from None
    return graph, arrays


def elements(shape) -> int:
    return math.prod(shape)
