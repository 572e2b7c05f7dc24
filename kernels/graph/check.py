"""The import check, and the tolerance an imported workload's kernels are held to.

:func:`derive_tolerance` reads the graph: pointwise graphs (and max/min reductions, whose
error does not grow with their length) get an elementwise ``atol``/``rtol`` that widens
with the longest chain of ops; graphs that accumulate (matmul, attention, sum/mean/var/prod)
get a relative-RMSE bound like the built-in matmul's (see kernels/workloads/matmul), widened
with the square root of the longest accumulation, because a correct float32 kernel's error
grows like ``eps * sqrt(k)`` and cancellation makes elementwise bounds meaningless.

:func:`import_check` runs our interpreter on the seeded inputs the capture returned and
compares with the model's own float32 outputs (kernels.harness.verify.compare). Torch is a
correct float32 implementation, so it must land within a loose multiple of that tolerance; if
it does not, the capture is not what the model computes, and the import is refused with the
numbers. The final tolerance is never tighter than twice what torch itself needed.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kernels.graph import interpreter, opset
from kernels.graph.ir import Graph
from kernels.harness import build
from kernels.harness.verify import compare, relative_rmse
from kernels.spec import Tolerance

ACCUMULATING = {"matmul", "attention", "sum", "mean", "var", "prod", "cumsum", "cumprod"}
CHECK_SLACK = 10.0   # torch may be this much further off than our kernels are allowed to be


@dataclass
class GraphStats:
    depth: int           # longest chain of arithmetic ops from an input to an output
    max_k: int           # longest accumulation (matmul inner size, reduction length)
    accumulating: bool
    chained: int         # most accumulating ops on one path


def stats(graph: Graph) -> GraphStats:
    depth, chain = {}, {}
    shapes = {t.name: t.shape for t in (*graph.inputs, *graph.params)}
    max_k, acc = 1, False
    for n in graph.nodes:
        shapes[n.name] = n.shape
        fam = opset.family(n.op)
        refs = n.refs()
        d = max((depth.get(r, 0) for r in refs), default=0) + (0 if fam == "view" else 1)
        c = max((chain.get(r, 0) for r in refs), default=0)
        if n.op in ACCUMULATING:
            acc, c = True, c + 1
            if n.op == "matmul":
                max_k = max(max_k, shapes[refs[0]][-1])
            elif n.op == "attention":
                max_k = max(max_k, shapes[refs[1]][-2], shapes[refs[0]][-1])
            elif n.op in ("cumsum", "cumprod"):
                max_k = max(max_k, shapes[refs[0]][n.attrs["dim"]])
            else:
                max_k = max(max_k, math.prod(shapes[refs[0]][i] for i in n.attrs["dims"]))
        depth[n.name], chain[n.name] = d, c
    outs = graph.outputs
    return GraphStats(max((depth.get(o, 0) for o in outs), default=0), max_k, acc,
                      max((chain.get(o, 0) for o in outs), default=0))


def derive_tolerance(graph: Graph) -> Tolerance:
    s = stats(graph)
    if s.accumulating:
        r = 1e-5 * max(1.0, math.sqrt(s.max_k / 1024)) * (1 + 0.5 * max(0, s.chained - 1))
        r *= 1 + 0.05 * max(0, s.depth - 8)
        return Tolerance(atol=1e-4, rtol=1e-4, rel_rmse=float(f"{min(r, 2e-4):.3g}"))
    widen = 1 + s.depth / 8
    return Tolerance(atol=float(f"{1e-5 * widen:.3g}"), rtol=float(f"{2e-5 * widen:.3g}"))


UNIT_ROUNDOFF = 2.0 ** -24
SENSITIVITY_TRIALS = 2


def sensitivity(graph: Graph, feeds: dict, *, trials: int = SENSITIVITY_TRIALS, seed: int = 0) -> list[float]:
    """Per output, how far the float64 result moves (relative RMSE, the largest over
    ``trials``) when every input and weight is scaled by 1 + u * sqrt(k) * N(0, 1), with u
    float32's unit roundoff and k the graph's longest accumulation: a float32 kernel's own
    rounding, read as a perturbation of its data (the backward-error view; a sum of k terms
    in float32 errs like u * sqrt(k)). On well-conditioned inputs this is a few u; where a tiny
    change swings the answer (two top scores within rounding of each other under a softmax
    sharpened 1000x), it is as large as that swing, which no float32 kernel can avoid."""
    rng = np.random.default_rng(seed)
    scale = UNIT_ROUNDOFF * math.sqrt(stats(graph).max_k)
    base = [np.asarray(o, dtype=np.float64) for o in interpreter.run(graph, feeds)]
    worst = [0.0] * len(base)
    for _ in range(trials):
        moved = {}
        for name, v in feeds.items():
            a = np.asarray(v)
            moved[name] = a.astype(np.float64) * (1.0 + scale * rng.standard_normal(a.shape)) \
                if a.dtype.kind == "f" else a
        with np.errstate(all="ignore"):
            outs = interpreter.run(graph, moved)
        for k, (o, b) in enumerate(zip(outs, base)):
            worst[k] = max(worst[k], relative_rmse(o, b))
    return worst


def loosened(tol: Tolerance, factor: float) -> Tolerance:
    return Tolerance(atol=tol.atol * factor, rtol=tol.rtol * factor,
                     rel_rmse=None if tol.rel_rmse is None else tol.rel_rmse * factor)


@dataclass
class CheckResult:
    ok: bool
    tolerance: Tolerance            # what kernels will be held to
    reports: list                   # one compare() report per (sample, output)
    reason: str = ""


def import_check(graph: Graph, params: dict, samples: list) -> CheckResult:
    """Interpreter vs the model's own float32 outputs on every captured sample."""
    tol = derive_tolerance(graph)
    loose = loosened(tol, CHECK_SLACK)
    reports, needed = [], 0.0
    for sample in samples:
        feeds = {**sample.inputs, **params}
        try:   # in the harness's memory-limited child, as every reference is (kernels.harness.build)
            got = build.in_child(lambda: {f"o{i}": np.asarray(r) for i, r in enumerate(interpreter.run(graph, feeds))},
                                 budget=build.cap_bytes(), what=f"the interpreter's outputs on seed {sample.seed}")
        except build.BuildError as exc:
            return CheckResult(False, tol, reports, f"the import could not be checked: {exc}")
        refs = [got[f"o{i}"] for i in range(len(got))]
        for i, (mine, theirs) in enumerate(zip(refs, sample.outputs)):
            rep = compare(np.asarray(theirs, dtype=np.float32), mine, loose)
            rep = {k: v for k, v in rep.items() if k != "shape"}
            rep.update(sample=sample.seed, output=i)
            reports.append(rep)
            if not rep["passed"]:
                return CheckResult(False, tol, reports,
                                   f"the captured graph does not compute what the model computes: on seed "
                                   f"{sample.seed}, output {i}: {rep.get('why', 'mismatch')} (our float64 "
                                   f"interpreter vs the model's float32 outputs, tolerance {loose.describe()})")
            needed = max(needed, _usage(mine, theirs, tol))
    if needed > 0.5:
        tol = loosened(tol, 2 * needed)
    return CheckResult(True, tol, reports)


def _usage(mine: np.ndarray, theirs: np.ndarray, tol: Tolerance) -> float:
    """How much of ``tol`` torch's own error used (1.0: all of it)."""
    ref, out = np.asarray(mine, dtype=np.float64), np.asarray(theirs, dtype=np.float64)
    finite = np.isfinite(ref) & np.isfinite(out)
    if not finite.any():
        return 0.0
    d = np.abs(out - ref)[finite]
    if tol.rel_rmse is not None:
        den = math.sqrt(float(np.mean(ref[finite] ** 2))) or 1.0
        return math.sqrt(float(np.mean(d ** 2))) / den / tol.rel_rmse
    return float(np.max(d / (tol.atol + tol.rtol * np.abs(ref[finite]))))
