"""The IR of an imported problem: a static-shape dataflow graph over float32 tensors.

A :class:`Graph` has

- ``inputs``: the tensors ``get_inputs()`` returns, in that order (the kernel's ``in`` args);
- ``params``: weights, buffers and folded constant tensors (also ``in`` args, after the inputs);
- ``nodes``: in topological order; each names our own normalised op (see :mod:`opset`), its
  operands (value names or numeric literals), its attributes, and its static output shape;
- ``outputs``: the values the model returns, in order (the kernel's ``out`` args).

Everything is JSON (``to_json``/``from_json``, with non-finite floats spelled as strings so
the text is strict JSON), and ``digest()`` is a content hash of that text. ``from_json`` is
strict: it is how a stored graph comes back, so it checks names, shapes, ops, operands and
every shape again (through :func:`kernels.graph.opset.infer`), and raises ``IRError`` with a
sentence on anything off. Values are ``f32`` tensors except the ``bool`` masks comparisons
make inside a graph; inputs, params and outputs are always ``f32``.
"""
from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field

NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,79}$")
ROLES = ("input", "param", "const")
DTYPES = ("f32", "bool")
MAX_RANK = 8
MAX_ELEMENTS = 1 << 31   # per tensor: float32 offsets stay well inside int64, buffers < 8 GiB


class IRError(ValueError):
    """A graph that does not check out; the message says what and where."""


@dataclass(frozen=True)
class Tensor:
    """A graph input or parameter. ``source`` says where it came from: the input's
    position in ``get_inputs()``, the module path of a weight (``lin.weight``), or ``folded``."""

    name: str
    shape: tuple[int, ...]
    role: str
    source: str = ""

    def to_json(self) -> dict:
        return {"name": self.name, "shape": list(self.shape), "role": self.role, "source": self.source}


@dataclass(frozen=True)
class Node:
    """One op. ``args`` are value names (str) or numeric literals (int/float/bool);
    ``attrs`` hold the op's static settings (dims, eps, slopes…)."""

    name: str
    op: str
    args: tuple
    shape: tuple[int, ...]
    attrs: dict = field(default_factory=dict, hash=False, compare=True)
    dtype: str = "f32"
    origin: str = ""   # the captured node it came from, for messages

    def refs(self) -> list[str]:
        return [a for a in self.args if isinstance(a, str)]

    def to_json(self) -> dict:
        return {"name": self.name, "op": self.op,
                "args": [{"ref": a} if isinstance(a, str) else {"lit": encode(a)} for a in self.args],
                "attrs": encode(self.attrs), "shape": list(self.shape), "dtype": self.dtype,
                "origin": self.origin}


@dataclass
class Graph:
    inputs: tuple[Tensor, ...]
    params: tuple[Tensor, ...]
    nodes: tuple[Node, ...]
    outputs: tuple[str, ...]

    # ------------------------------------------------------------------ queries

    def values(self) -> dict[str, Tensor | Node]:
        out: dict[str, Tensor | Node] = {t.name: t for t in (*self.inputs, *self.params)}
        out.update((n.name, n) for n in self.nodes)
        return out

    def shape_of(self, name: str) -> tuple[int, ...]:
        return self.values()[name].shape

    def consumers(self) -> dict[str, list[Node]]:
        users: dict[str, list[Node]] = {name: [] for name in self.values()}
        for n in self.nodes:
            for r in dict.fromkeys(n.refs()):
                users[r].append(n)
        return users

    def op_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for n in self.nodes:
            counts[n.op] = counts.get(n.op, 0) + 1
        return counts

    # ------------------------------------------------------------------ JSON

    def to_json(self) -> dict:
        return {"version": 1,
                "inputs": [t.to_json() for t in self.inputs],
                "params": [t.to_json() for t in self.params],
                "nodes": [n.to_json() for n in self.nodes],
                "outputs": list(self.outputs)}

    def dumps(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"), allow_nan=False)

    def digest(self) -> str:
        return hashlib.sha256(self.dumps().encode()).hexdigest()

    @classmethod
    def from_json(cls, data: dict) -> "Graph":
        if not isinstance(data, dict) or data.get("version") != 1:
            raise IRError("not a version-1 graph")
        groups = []
        for key in ("inputs", "params"):
            items = []
            for t in _list(data, key):
                name, shape, role = _name(t.get("name")), _shape(t.get("shape")), t.get("role")
                if role not in ROLES or (key == "inputs") != (role == "input"):
                    raise IRError(f"{key[:-1]} {name}: role {role!r} does not belong in {key}")
                items.append(Tensor(name, shape, role, str(t.get("source", ""))[:200]))
            groups.append(tuple(items))
        nodes = []
        for raw in _list(data, "nodes"):
            args = []
            for a in raw.get("args", []):
                if isinstance(a, dict) and set(a) == {"ref"}:
                    args.append(_name(a["ref"]))
                elif isinstance(a, dict) and set(a) == {"lit"}:
                    lit = decode(a["lit"])
                    if not isinstance(lit, (int, float, bool)):
                        raise IRError(f"node {raw.get('name')}: literal {a['lit']!r} is not a number")
                    args.append(lit)
                else:
                    raise IRError(f"node {raw.get('name')}: operand {a!r} is neither a ref nor a literal")
            attrs = decode(raw.get("attrs", {}))
            if not isinstance(attrs, dict):
                raise IRError(f"node {raw.get('name')}: attrs must be an object")
            nodes.append(Node(_name(raw.get("name")), str(raw.get("op")), tuple(args), _shape(raw.get("shape")),
                              attrs, str(raw.get("dtype", "f32")), str(raw.get("origin", ""))[:200]))
        outputs = tuple(_name(o) for o in _list(data, "outputs"))
        graph = cls(groups[0], groups[1], tuple(nodes), outputs)
        graph.validate()
        return graph

    @classmethod
    def loads(cls, text: str) -> "Graph":
        try:
            return cls.from_json(json.loads(text))
        except (ValueError, TypeError, KeyError) as exc:
            if isinstance(exc, IRError):
                raise
            raise IRError(f"graph JSON does not parse: {exc}") from None

    # ------------------------------------------------------------------ checks

    def validate(self) -> None:
        """Names unique, operands defined before use, ops known, shapes as the op rules say."""
        from kernels.graph import opset
        seen: dict[str, tuple[tuple[int, ...], str]] = {}
        for t in (*self.inputs, *self.params):
            if t.name in seen:
                raise IRError(f"value name {t.name} is used twice")
            seen[t.name] = (t.shape, "f32")
        for n in self.nodes:
            if n.name in seen:
                raise IRError(f"value name {n.name} is used twice")
            if n.dtype not in DTYPES:
                raise IRError(f"node {n.name}: dtype {n.dtype!r} is not one of {DTYPES}")
            for r in n.refs():
                if r not in seen:
                    raise IRError(f"node {n.name} uses {r}, which is not defined before it")
            try:
                shape, dtype = opset.infer(n.op, [seen[a] if isinstance(a, str) else a for a in n.args], n.attrs)
            except opset.OpError as exc:
                raise IRError(f"node {n.name} ({n.op}): {exc}") from None
            if tuple(shape) != n.shape or dtype != n.dtype:
                raise IRError(f"node {n.name} ({n.op}): declared {n.dtype}{list(n.shape)}, "
                              f"the op gives {dtype}{list(shape)}")
            seen[n.name] = (n.shape, n.dtype)
        if not self.outputs:
            raise IRError("the graph has no outputs")
        for o in self.outputs:
            if o not in seen:
                raise IRError(f"output {o} is not a value of the graph")
            if seen[o][1] != "f32":
                raise IRError(f"output {o} is {seen[o][1]}, not float32")


# --------------------------------------------------------------------------- helpers

def numel(shape) -> int:
    return math.prod(shape)


def encode(value):
    """JSON-safe form: non-finite floats become {"float": "inf" | "-inf" | "nan"}."""
    if isinstance(value, float) and not math.isfinite(value):
        return {"float": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
    if isinstance(value, dict):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    return value


def decode(value):
    if isinstance(value, dict):
        if set(value) == {"float"} and value["float"] in ("inf", "-inf", "nan"):
            return float(value["float"])
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


def _list(data: dict, key: str) -> list:
    v = data.get(key)
    if not isinstance(v, list):
        raise IRError(f"graph field {key!r} must be a list")
    return v


def _name(v) -> str:
    if not isinstance(v, str) or not NAME.match(v):
        raise IRError(f"{v!r} is not a valid value name")
    return v


def _shape(v) -> tuple[int, ...]:
    if not isinstance(v, list) or len(v) > MAX_RANK or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in v):
        raise IRError(f"shape {v!r} must be a list of at most {MAX_RANK} positive integers")
    if numel(v) > MAX_ELEMENTS:
        raise IRError(f"shape {v!r} has more than {MAX_ELEMENTS} elements")
    return tuple(v)
