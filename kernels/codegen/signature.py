"""What a generated program's group summaries say (``Program.groups``, an import's meta.json
``groups``): a group's signature key, its description in words, its sizes, its knob prefix,
and which forms a config runs.

Pure functions over the summaries' JSON, shared by the lessons keyed by group signature
(``swarm/knowledge/groups.py``) and the engine's per-group time breakdown
(:mod:`kernels.engine.breakdown`).
"""
from __future__ import annotations

import hashlib
import json

from kernels.spec import Shape

# Summary fields that are sizes, not structure: they go into the shape bucket, not the key.
SIZE_FIELDS = frozenset({"shape", "m", "n", "k", "batch", "l", "s", "e", "matches", "inputs"})


def signature_key(summary: dict) -> str:
    """``group:<family>:<digest of the structure>`` (fits a lesson's workload field)."""
    structure = {k: v for k, v in sorted(summary.items()) if k not in SIZE_FIELDS}
    if "shape" in summary:
        structure["rank"] = len(summary["shape"])
    if summary.get("batch", 1) != 1:
        structure["batched"] = True
    blob = json.dumps(structure, sort_keys=True, default=str)
    return f"group:{summary.get('family', '?')}:{hashlib.sha256(blob.encode()).hexdigest()[:16]}"


def describe(summary: dict) -> str:
    """The key in words, for lesson texts: ``row reduction amax,sub,exp,sum,div``."""
    fam = summary.get("family", "?")
    if fam == "matmul":
        epi = "+".join(summary.get("epilogue") or [])
        return f"matmul{'+' + epi if epi else ''}"
    ops = ",".join(summary.get("ops") or [summary.get("op", "")])
    layout = summary.get("layout")
    return f"{layout + ' ' if layout else ''}{fam} {ops}".strip()


def group_shape(summary: dict) -> Shape:
    """The group's sizes as a shape (its lessons' bucket): m, n, k for a matmul, else its domain."""
    if summary.get("family") == "matmul":
        return Shape.of(m=summary["m"], n=summary["n"], k=summary["k"])
    if summary.get("family") == "attention":
        return Shape.of(**{d: summary[d] for d in ("l", "s", "e") if d in summary})
    return Shape(tuple((f"d{i}", int(v)) for i, v in enumerate(summary.get("shape") or [])))


def sizes(summary: dict) -> str:
    """The group's sizes in words: ``1x64x64`` (m, n, k; a domain; attention's l, s, e)."""
    return "x".join(str(v) for _, v in group_shape(summary).dims) or "scalar"


def prefix(group: dict) -> str:
    return f"G{group['id']}_"


def active(groups: list[dict], params: dict) -> list[dict]:
    """The groups that ran for this config: a ``FUSE_*`` bit picks its fused form or the other two."""
    out = []
    for g in groups:
        form, bit = g.get("form"), g.get("fuse")
        if form is None or bit is None or bit not in params:
            out.append(g)
        elif bool(params[bit]) == (form == "fused"):
            out.append(g)
    return out
