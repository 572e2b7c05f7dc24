"""The walk that turns captured FX records into IR, through the table in :mod:`aten_base`.

Importing this module registers every handler (:mod:`aten_pointwise`, :mod:`aten_tensor`).
Norms, softmax and friends are spelled in IR primitives (reductions + pointwise), which the
code generator fuses back together; attention stays one op.
"""
from __future__ import annotations

import math

import numpy as np

from kernels.graph import aten_conv, aten_gather, aten_pointwise, aten_tensor  # noqa: F401  (they register the handlers)
from kernels.graph.aten_base import HANDLERS, reshape, shp, why_unsupported  # noqa: F401
from kernels.graph.ir import Tensor
from kernels.graph.translate import TORCH_DTYPES, Builder, Unsupported, Val, c_name, finish, torch_shape

# --------------------------------------------------------------------------- the walk

def translate(records: dict, weights: dict) -> tuple:
    """(Graph, {param name: float32 array}); raises :class:`Unsupported` with a reason."""
    b = Builder()
    env: dict[str, Val] = {}
    inputs: list[Tensor] = []
    taken: set[str] = set()
    outputs: list[str] = []
    user_index = 0
    kinds = records.get("output_kinds", [])
    if any(k != "USER_OUTPUT" for k in kinds):
        raise Unsupported("the model changes its own state in forward (a buffer or input is mutated, e.g. "
                          "batch norm in training mode); only pure functions of the inputs can be imported",
                          kind="unsupported")
    for rec in records["nodes"]:
        op, name = rec["op"], rec["name"]
        b.origin = name
        if op == "placeholder":
            env[name] = _placeholder(b, rec, weights, inputs, taken, user_index)
            user_index += rec.get("kind") == "USER_INPUT"
        elif op == "call_function":
            _symbolic(rec)
            target = rec["target"]
            handler = HANDLERS.get(target)
            if handler is None and target in ("<built-in function getitem>", "getitem"):
                handler = _getitem
            if handler is None:
                raise Unsupported(f"node {name} calls {target}: {why_unsupported(target)}", node=name, op=target)
            args = _resolve(rec["args"], env)
            kwargs = {k: _resolve(v, env) for k, v in rec["kwargs"].items()}
            out = handler(b, rec, *args, **kwargs)
            env[name] = _check(b, rec, out)
        elif op == "output":
            flat = _flat_refs(rec["args"][0] if rec["args"] else [])
            for i, ref in enumerate(flat):
                outputs.append(_output(b, env.get(ref) if isinstance(ref, str) else None, i, outputs))
        else:
            raise Unsupported(f"node {name}: FX {op} nodes are not supported", node=name, op=op)
    if not outputs:
        raise Unsupported("the model returns no tensors", kind="format")
    return finish(b, inputs, outputs)


def _placeholder(b, rec, weights, inputs, taken, user_index) -> Val:
    val = rec.get("val")
    if isinstance(val, dict) and "scalar" in val:   # an int/float argument: export bakes it in
        v = val["scalar"]
        return Val(scalar=float(v["float"]) if isinstance(v, dict) and "float" in v else v)
    shape, dtype = torch_shape(val, rec["name"]) or ((), "none")
    kind = rec.get("kind")
    if kind == "USER_INPUT":
        if dtype != "torch.float32":
            raise Unsupported(f"input {rec['name']} is {dtype}; only float32 tensors are supported",
                              node=rec["name"], kind="dtype")
        name = c_name(rec["name"], taken)
        inputs.append(Tensor(name, shape, "input", f"get_inputs()[{user_index}]"))
        b.specs[name] = (shape, "f32")
        return Val(name=name, shape=shape, dtype="f32")
    if kind in ("PARAMETER", "BUFFER", "CONSTANT_TENSOR"):
        arr = weights.get(rec["name"])
        if arr is not None and dtype in ("torch.bool", "torch.int64", "torch.int32") and kind != "PARAMETER":
            # a causal mask or positions held by the model: fixed at capture, folded like arange's
            return Val(const=np.asarray(arr, dtype=np.bool_ if dtype == "torch.bool" else np.int64))
        if dtype != "torch.float32" or arr is None:
            return Val(refused=f"{kind.lower()} {rec.get('source') or rec['name']} is {dtype}; only float32 "
                               "weights are supported")
        name = c_name(rec["name"], taken)
        b.params[name] = arr
        b.param_roles[name] = ("param", str(rec.get("source") or rec["name"]))
        b.specs[name] = (shape, "f32")
        return Val(name=name, shape=shape, dtype="f32")
    raise Unsupported(f"placeholder {rec['name']} of kind {kind} is not supported", node=rec["name"])


def _output(b, val, i, taken_outputs) -> str:
    if val is None or val.refused:
        raise Unsupported(val.refused if val is not None and val.refused else f"output {i} is not a tensor",
                          kind="unsupported" if val is not None else "format")
    if val.name is None:
        val = b.tensor(val)
    if val.dtype != "f32":
        raise Unsupported(f"output {i} is a {val.dtype} tensor; outputs must be float32", kind="dtype")
    made_by_node = any(n.name == val.name for n in b.nodes)
    if val.name in taken_outputs or not made_by_node:   # each output gets a node of its own
        val = b.op("identity", val)
    return val.name


def _symbolic(rec) -> None:
    """A size torch could only name symbolically (it depends on the data): refused first,
    whatever the op, because no static kernel can be written for it."""
    def walk(v):
        if isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, dict) and isinstance(v.get("shape"), list):
            for d in v["shape"]:
                if not isinstance(d, int):
                    raise Unsupported(f"node {rec['name']} ({rec.get('target')}) has a data-dependent size "
                                      f"{d.get('sym', d) if isinstance(d, dict) else d}: shapes must be static",
                                      node=rec["name"], op=str(rec.get("target")), kind="dynamic")
    walk(rec.get("val"))


def _getitem(b, r, tup, index):
    if not isinstance(tup, Val) or tup.items is None:
        raise Unsupported(f"node {r['name']}: getitem on a non-tuple", node=r["name"])
    return tup.items[index]


def _resolve(a, env):
    if isinstance(a, dict):
        if "node" in a:
            v = env.get(a["node"])
            if v is None:
                raise Unsupported(f"node {a['node']} is used but produced no value", node=str(a["node"]))
            if v.refused:
                raise Unsupported(v.refused)
            return v
        if "float" in a:
            return float(a["float"])
        if "sym" in a:
            raise Unsupported(f"a symbolic value ({a['sym']}) appears: shapes must be static", kind="dynamic")
        if "dtype" in a or "enum" in a:
            return a
        if "other" in a:
            return a
        return a
    if isinstance(a, list):
        return [_resolve(x, env) for x in a]
    return a


def _flat_refs(a) -> list:
    if isinstance(a, dict) and "node" in a:
        return [a["node"]]
    if isinstance(a, list):
        return [x for item in a for x in _flat_refs(item)]
    return [None]


def _check(b, rec, out):
    """The handler's result must have the shape and dtype torch recorded. Secondary outputs
    of a tuple (a norm's saved statistics) are reshaped to torch's layout of them."""
    val = rec.get("val")
    if out is None or not isinstance(out, Val):
        return out
    if out.items is not None:
        if isinstance(val, list):
            items = list(out.items)
            for i, (item, v) in enumerate(zip(items, val)):
                if not isinstance(item, Val) or item.refused or item.items is not None:
                    continue
                got = torch_shape(v, rec["name"])
                if i > 0 and got is not None and tuple(shp(item)) != got[0] and \
                        math.prod(shp(item)) == math.prod(got[0]):
                    items[i] = reshape(b, item, got[0])
                else:
                    items[i] = _check(b, {"name": rec["name"], "val": v, "target": rec.get("target", "")}, item)
            out = Val(items=items)
        return out
    got = torch_shape(val, rec["name"])
    if got is None or out.refused:
        return out
    shape, dtype = got
    mine = shp(out)
    if tuple(mine) != tuple(shape):
        raise Unsupported(f"node {rec['name']}: translated to shape {list(mine)}, torch says {list(shape)}",
                          node=rec["name"], op=rec.get("target", ""), kind="internal")
    if out.name is not None and dtype not in TORCH_DTYPES:
        raise Unsupported(f"node {rec['name']} makes a {dtype} tensor; only float32 (and bool masks) are supported",
                          node=rec["name"], op=rec.get("target", ""), kind="dtype")
    if out.name is not None and TORCH_DTYPES[dtype] != out.dtype:
        raise Unsupported(f"node {rec['name']}: translated to {out.dtype}, torch says {dtype}",
                          node=rec["name"], kind="internal")
    return out
