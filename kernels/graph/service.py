"""Importing a problem: the one service under the CLI, the web page and the API.

``import_problem(source, name=..., overrides=...)`` captures the problem in the sandbox,
checks the capture against the model's own outputs, captures it again at any extra shapes
(``overrides``: constants to set, one dict per extra shape) and at a smaller awkward shape
it derives itself, searches the stress distributions on the interpreter, generates the
kernel source and stores it all; it returns an :class:`ImportResult` — the stored workload's
summary, or the :class:`~kernels.graph.capture.CaptureFailure` that stopped it. Nothing is
stored unless everything passed. ``preview(source)`` does the capture and says what is and
is not supported, and how the graph would be split, without storing anything.
"""
from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field

import numpy as np

from kernels.graph import capture as cap
from kernels.graph import check, inputs, opset, problem, store
from kernels.graph.ir import Graph
from kernels.graph.translate import C_RESERVED


@dataclass
class ImportResult:
    ok: bool
    name: str | None = None
    digest: str | None = None
    path: str | None = None
    summary: dict = field(default_factory=dict)
    failure: cap.CaptureFailure | None = None

    def to_json(self) -> dict:
        return {"ok": self.ok, "name": self.name, "digest": self.digest, "summary": self.summary,
                "failure": self.failure.to_json() if self.failure else None}


@dataclass
class PreviewResult:
    supported: bool
    survey: list = field(default_factory=list)      # every captured call: node, target, supported, why
    graph: dict = field(default_factory=dict)       # inputs, params, outputs, op counts
    groups: list = field(default_factory=list)      # the fusion groups the generator would make
    constants: dict = field(default_factory=dict)   # the module constants a shape may override
    failure: cap.CaptureFailure | None = None

    def to_json(self) -> dict:
        return {"supported": self.supported, "survey": self.survey, "graph": self.graph, "groups": self.groups,
                "constants": self.constants, "failure": self.failure.to_json() if self.failure else None}


def _fail(kind: str, reason: str, **kw) -> cap.CaptureFailure:
    return cap.CaptureFailure(kind, reason, **kw)


def graph_summary(graph: Graph) -> dict:
    return {"inputs": [t.to_json() for t in graph.inputs],
            "params": [{"name": t.name, "shape": list(t.shape), "source": t.source} for t in graph.params],
            "outputs": [{"value": o, "shape": list(graph.shape_of(o))} for o in graph.outputs],
            "ops": graph.op_counts(), "nodes": len(graph.nodes)}


def cost(graph: Graph) -> tuple[float, float]:
    """(flops, compulsory bytes) of one call: matmuls count 2mnk, other ops one per element."""
    values = graph.values()
    flops = 0.0
    for n in graph.nodes:
        if n.op == "matmul":
            flops += 2.0 * math.prod(n.shape) * values[n.args[0]].shape[-1]
        elif n.op == "attention":
            q, k = values[n.args[0]].shape, values[n.args[1]].shape
            flops += 4.0 * math.prod(q[:-1]) * k[-2] * q[-1]
        elif opset.family(n.op) != "view":
            flops += float(math.prod(values[n.refs()[0]].shape if n.refs() else n.shape))
    nbytes = 4.0 * (sum(math.prod(t.shape) for t in (*graph.inputs, *graph.params))
                    + sum(math.prod(graph.shape_of(o)) for o in graph.outputs))
    return flops, nbytes


def preview(source: str, *, overrides: dict | None = None, limits: cap.CaptureLimits | None = None) -> PreviewResult:
    try:
        consts = {k: c.value for k, c in problem.constants(source).items()}
    except problem.ProblemError:
        consts = {}
    got = cap.capture(source, overrides=overrides, limits=limits)
    if isinstance(got, cap.CaptureFailure):
        return PreviewResult(False, got.details.get("survey", []), constants=consts, failure=got)
    checked = check.import_check(got.graph, got.params, got.samples)
    groups = []
    try:
        from kernels.codegen import program
        groups = [{k: g[k] for k in ("id", "family", "form", "members", "outputs", "domain", "signature")}
                  for g in program.generate(got.graph).groups]
    except Exception as exc:   # the generator's failure is reported, not raised
        return PreviewResult(False, got.survey, graph_summary(got.graph), constants=consts,
                             failure=_fail("codegen", f"the code generator failed: {type(exc).__name__}: {exc}"))
    failure = None if checked.ok else _fail("mismatch", checked.reason)
    return PreviewResult(checked.ok, got.survey, graph_summary(got.graph), groups, consts, failure)


def import_problem(source: str, *, name: str | None = None, overrides=None, ops_dir=None,
                   limits: cap.CaptureLimits | None = None, awkward: bool | list = True,
                   on_progress=None) -> ImportResult:
    """``awkward``: True derives a smaller awkward shape, False none, a list of override
    dicts gives the awkward shapes (each checked on every seed and distribution by the
    harness); ``on_progress(done, total, what)`` hears of each capture."""
    from kernels import workloads
    from kernels.codegen import program
    started = time.monotonic()
    extra = [dict(o) for o in ([overrides] if isinstance(overrides, dict) else (overrides or [])) if o]
    try:
        consts = problem.constants(source)
    except problem.ProblemError as exc:
        kind = "syntax" if "syntax" in str(exc) else "format"
        m = re.search(r"line (\d+)", str(exc))
        return ImportResult(False, failure=_fail(kind, str(exc), line=int(m.group(1)) if m else None))
    if name is not None and (not store.NAME.match(name) or name in workloads.WORKLOADS):
        return ImportResult(False, failure=_fail("format", f"{name!r} cannot name an imported workload: use "
                                                           "lower_case letters, digits and _, not a built-in's name"))
    first = cap.capture(source, limits=limits)
    if isinstance(first, cap.CaptureFailure):
        return ImportResult(False, failure=first)
    checked = check.import_check(first.graph, first.params, first.samples)
    if not checked.ok:
        return ImportResult(False, failure=_fail("mismatch", checked.reason, details={"reports": checked.reports}))
    shapes = [({}, "typical", first, checked)]
    given = [dict(o) for o in awkward] if isinstance(awkward, (list, tuple)) else []
    todo = [(ov, "extra") for ov in extra] + [(ov, "awkward") for ov in given]
    if on_progress:
        on_progress(1, 1 + len(todo), "captured the typical shape")
    for k, (ov, role) in enumerate(todo):
        got = cap.capture(source, overrides=ov, limits=limits)
        if isinstance(got, cap.CaptureFailure):
            got.reason = f"at {_label(ov)}: {got.reason}"
            return ImportResult(False, failure=got)
        c = check.import_check(got.graph, got.params, got.samples)
        if not c.ok:
            return ImportResult(False, failure=_fail("mismatch", f"at {_label(ov)}: {c.reason}"))
        shapes.append((ov, role, got, c))
        if on_progress:
            on_progress(k + 2, 1 + len(todo), f"captured {_label(ov)}")
    int_consts = {k: c.value for k, c in consts.items() if isinstance(c.value, int)}
    if awkward is True and int_consts:
        small = _awkward(source, int_consts, first.graph, limits)
        if small is not None:
            shapes.append(small)
    dims, dim_values = _dims(int_consts, shapes, first.graph)
    graphs = [s[2].graph for s in shapes]
    try:
        prog = program.generate_multi(graphs, dim_values, dims, title=name or "imported problem",
                                      param_digests=[params_digest(s[2].params) for s in shapes])
    except Exception as exc:
        return ImportResult(False, failure=_fail("codegen", f"the code generator failed: {type(exc).__name__}: {exc}"))
    smallest = min(range(len(shapes)), key=lambda k: sum(math.prod(t.shape) for t in graphs[k].inputs))
    descs = {t.name: inputs.infer([s.inputs[t.name] for s in first.samples]) for t in first.graph.inputs}
    tol = _loosest([s[3].tolerance for s in shapes])
    stress = inputs.search_stress(graphs[smallest], shapes[smallest][2].params, descs, tol=tol)
    dig = store.digest(source, [s[0] for s in shapes])
    name = name or f"op_{dig[:10]}"
    meta = {
        "name": name, "digest": dig, "description": _describe(source, name), "created": time.time(),
        "torch": first.torch, "init_seed": cap.INIT_SEED, "dims": dims, "call": first.call,
        "constants": {k: c.value for k, c in consts.items()},
        "args": [{"name": a.name, "kind": a.kind} for a in prog.args],
        "inputs": descs, "stress": stress, "distributions": list(inputs.distributions(stress)),
        "tolerance": {"atol": tol.atol, "rtol": tol.rtol, "rel_rmse": tol.rel_rmse},
        "flop_bound": any(n.op in ("matmul", "attention") for n in first.graph.nodes),
        "shapes": [{"role": role, "overrides": ov, "dims": dict(zip(dims, dv)), "graph_digest": got.graph.digest(),
                    "flops": cost(got.graph)[0], "bytes": cost(got.graph)[1],
                    "weights": {t.name: t.source for t in got.graph.params if t.role == "param"},
                    "check": c.reports}
                   for (ov, role, got, c), dv in zip(shapes, dim_values)],
        "space": prog.space.to_json(), "groups": prog.groups, "arena_floats": prog.arena_floats, "arena": prog.arena,
        "survey": first.survey, "isolation": first.isolation, "graph": graph_summary(first.graph),
        "seconds": round(time.monotonic() - started, 1),
    }
    path = store.save(ops_dir, name, dig, source, meta, [(s[2].graph, s[2].params) for s in shapes], prog.source)
    workloads.forget(name)
    summary = {k: meta[k] for k in ("name", "digest", "dims", "args", "distributions", "tolerance", "graph", "seconds")}
    summary["shapes"] = [{"role": s["role"], "dims": s["dims"]} for s in meta["shapes"]]
    summary["groups"] = [{k: g[k] for k in ("id", "family", "form", "members", "domain")} for g in prog.groups]
    return ImportResult(True, name, dig, str(path), summary)


def params_digest(params: dict) -> str:
    """A digest of a capture's params (names, shapes and bytes): shapes that share a generated
    unit must have been fed the same ones (kernels.codegen.dynamic)."""
    import hashlib
    h = hashlib.sha256()
    for k in sorted(params):
        a = np.ascontiguousarray(params[k])
        h.update(f"{k}:{a.dtype}:{a.shape};".encode())
        h.update(memoryview(a).cast("B"))
    return h.hexdigest()


def _label(ov: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in ov.items())


def _describe(source: str, name: str) -> str:
    m = re.match(r'\s*(?:"""|\'\'\')(.*?)(?:"""|\'\'\')', source, re.S)
    text = " ".join(m.group(1).split()) if m else ""
    return (text[:200] or f"Imported problem {name}")


def _loosest(tols):
    from kernels.spec import Tolerance
    rr = [t.rel_rmse for t in tols if t.rel_rmse is not None]
    return Tolerance(atol=max(t.atol for t in tols), rtol=max(t.rtol for t in tols), rel_rmse=max(rr) if rr else None)


def _dims(int_consts: dict, shapes: list, graph: Graph) -> tuple[list, list]:
    """Dim names (C-safe) and each shape's values: the integer constants, else input axes."""
    taken = {t.name for t in (*graph.inputs, *graph.params)} | {f"out{k}" for k in range(len(graph.outputs))}
    if int_consts:
        names = []
        for k in int_consts:
            n = k if (k not in taken and k not in C_RESERVED and re.match(r"^[A-Za-z_]\w{0,40}$", k)
                      and not k.startswith("i21_")) else f"dim_{k}"[:48]
            names.append(n)
        values = [[int(ov.get(k, v)) for k, v in int_consts.items()] for ov, _, _, _ in shapes]
        return names, values
    names = [f"{t.name}_{a}" for t in graph.inputs for a in range(len(t.shape))]
    return names, [[d for t in s[2].graph.inputs for d in t.shape] for s in shapes]


def _awkward(source, int_consts, graph, limits):
    """A smaller capture with odd sizes, with the same ops as the typical one; None if the
    problem does not allow one (its constants are tied together in ways we cannot see)."""
    ops = [n.op for n in graph.nodes]
    tries = [{k: max(3, (v // 4) | 1) for k, v in int_consts.items() if v >= 32},
             {k: max(2, v // 2) for k, v in int_consts.items() if v >= 16}]
    for ov in tries:
        ov = {k: v for k, v in ov.items() if v != int_consts[k]}
        if not ov:
            continue
        got = cap.capture(source, overrides=ov, limits=limits)
        if isinstance(got, cap.CaptureFailure) or [n.op for n in got.graph.nodes] != ops:
            continue
        c = check.import_check(got.graph, got.params, got.samples)
        if c.ok:
            return (ov, "awkward", got, c)
    return None
