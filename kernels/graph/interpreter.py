"""The trusted float64 interpreter: an imported workload's golden reference.

It runs a :class:`~kernels.graph.ir.Graph` node by node with the NumPy semantics of
:mod:`kernels.graph.opset`, in float64 (masks as bool). It never sees the user's code;
the model's own float32 outputs only confirm, at import, that the capture is faithful.
"""
from __future__ import annotations

from typing import Callable, Mapping

import numpy as np

from kernels.graph import opset
from kernels.graph.ir import Graph


def run(graph: Graph, feeds: Mapping[str, np.ndarray], *, keep: Callable[[str], bool] | None = None,
        observe: Callable[[str, np.ndarray], None] | None = None, float32: bool = False) -> list[np.ndarray]:
    """The graph's outputs (float64, in ``graph.outputs`` order) for ``feeds``: every input
    and param by name. ``observe(name, value)`` sees each node's value as it is made (the
    stress distributions use it to find intermediates outside float32's range). Values are
    dropped after their last use, so peak memory is the live set, not the whole graph.
    ``float32``: round every value to float32 after each op — a plain float32 implementation,
    which the stress search holds to the tolerance to find inputs no float32 kernel can meet."""
    env: dict[str, np.ndarray] = {}
    for t in (*graph.inputs, *graph.params):
        if t.name not in feeds:
            raise KeyError(f"no value fed for {t.role} {t.name}")
        arr = np.asarray(feeds[t.name], dtype=np.float32 if float32 else np.float64).astype(np.float64)
        if arr.shape != t.shape and arr.size == int(np.prod(t.shape)) and arr.size == 1:
            arr = arr.reshape(t.shape)   # a 0-d value that went through np.ascontiguousarray
        if arr.shape != t.shape:
            raise ValueError(f"{t.role} {t.name} has shape {arr.shape}, the graph says {t.shape}")
        env[t.name] = arr
    last_use = {}
    for i, n in enumerate(graph.nodes):
        for r in n.refs():
            last_use[r] = i
    outputs = set(graph.outputs)
    for i, n in enumerate(graph.nodes):
        operands = [env[a] if isinstance(a, str) else a for a in n.args]
        value = opset.evaluate(n.op, operands, n.attrs)
        if float32 and value.dtype != np.bool_:
            with np.errstate(over="ignore"):
                value = value.astype(np.float32).astype(np.float64)
        if value.shape != n.shape:   # a broadcast literal-only result, or a 0-d NumPy scalar
            value = np.broadcast_to(value, n.shape)
        env[n.name] = value
        if observe is not None:
            observe(n.name, value)
        for r in set(n.refs()):
            if last_use.get(r) == i and r not in outputs and (keep is None or not keep(r)):
                env.pop(r, None)
    return [np.array(env[o], dtype=np.float64, order="C") for o in graph.outputs]
