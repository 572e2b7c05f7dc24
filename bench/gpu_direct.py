"""Template points timed in this process on a GPU, beside the baselines and a copy, for the
device campaign (bench/gpu_campaign.py).

Only the factory's own template sources instantiated at design-space points run here (the
seeds and points of their spaces, never free-form candidate code): candidates found by a
swarm are judged by the sandboxed evaluator in the campaign's swarm steps. Each point is
compiled by its target (sandboxed nvcc/ptxas, cached), audited, checked against the
float64 reference on small shapes, then timed with CUDA events interleaved round by round
with the workload's GPU baselines and a device-to-device copy of the same bytes (the
session's memory pace, measured in the same call). The kernel ABI binding is the runner's
(kernels.targets.cuda_runner.Candidate), so a point runs exactly as in the harness.

``Device`` is the seam: :class:`CupyDevice` on a GPU host, :class:`FakeDevice` for the
dry run (NumPy computes the reference where the kernel would run; times are made up and
labelled so), which still compiles and audits every point for real.
"""
from __future__ import annotations

import random
import statistics
import types
from importlib import import_module

import numpy as np

from kernels import targets
from kernels.harness.verify import compare
from kernels.spec import Tolerance
from kernels.targets.base import CompileFailure


class CupyDevice:
    fake = False

    def __init__(self):
        import cupy as cp
        self.cp = cp
        self.stream = cp.cuda.Stream(non_blocking=True)

    def array(self, a):
        return self.cp.asarray(a)

    def empty(self, shape):
        return self.cp.empty(shape, dtype=self.cp.float32)

    def get(self, a):
        return self.cp.asnumpy(a)

    def kernel(self, cubin, wl, arrays, shape, launch):
        """The zero-argument launch of ``cubin``'s kernel on ``arrays`` (inputs, outputs, scalars)."""
        from kernels.targets.cuda_runner import Candidate
        cand = Candidate(self.cp, str(cubin), [{"name": a.name, "kind": a.kind} for a in wl.args], "kernel")
        grid, block, shared = launch
        case = types.SimpleNamespace(
            inputs={n: types.SimpleNamespace(array=arrays[n]) for n in arrays if n in _names(wl, "in")},
            outputs={n: types.SimpleNamespace(array=arrays[n]) for n in _names(wl, "out")},
            dims=shape.as_dict(), scalars={a.name: arrays[a.name] for a in wl.args if a.kind == "f32"},
            grid=tuple(grid), block=tuple(block), shared=int(shared))
        problems = cand.launch_problems(case)
        if problems:
            raise RuntimeError("; ".join(problems))
        return cand.bind(case)

    def copy_probe(self, src):
        dst = self.cp.empty_like(src)
        return lambda: self.cp.copyto(dst, src)

    def sync(self):
        self.stream.synchronize()

    def time(self, calls: dict, rounds: int, budget_s: float) -> dict:
        """Median ms (and IQR) per call: the harness's one interleaved loop
        (``kernels.harness.timing.interleave``, secret order each round) with a CUDA-event
        timer around each call on this stream."""
        import numpy as np
        from kernels.harness.timing import Impl, interleave
        cp = self.cp

        def timed(fn):
            def call():
                a, b = cp.cuda.Event(), cp.cuda.Event()
                a.record(self.stream)
                fn()
                b.record(self.stream)
                b.synchronize()
                return cp.cuda.get_elapsed_time(a, b) / 1e3
            return call
        with self.stream:
            impls = [Impl(n, timed(fn)) for n, fn in calls.items()]
            samples = interleave(impls, rng=np.random.default_rng(), min_calls=min(rounds, 20), max_calls=rounds,
                                 budget_s=budget_s, target_rel_err=0.01, warmup=1)
        return {n: _summary(s) for n, s in samples.items()}

    def baseline(self, fn: str, inputs, outputs, shape):
        mod, _, attr = fn.partition(":")
        with self.stream:
            return getattr(import_module(mod), attr)(inputs, outputs, shape.as_dict())

    def context(self):
        return self.stream


class FakeDevice:
    """The dry run's stand-in: NumPy arrays, the reference as the 'kernel', made-up times."""

    fake = True

    def array(self, a):
        return np.array(a)

    def empty(self, shape):
        return np.full(shape, np.nan, np.float32)

    def get(self, a):
        return np.asarray(a)

    def kernel(self, cubin, wl, arrays, shape, launch):
        def call():
            inputs = {a.name: arrays[a.name] for a in wl.args if a.kind in ("in", "f32")}
            for name, ref in wl.reference(inputs, shape).items():
                arrays[name][...] = ref
        return call

    def copy_probe(self, src):
        dst = np.empty_like(src)
        return lambda: np.copyto(dst, src)

    def sync(self):
        pass

    def time(self, calls, rounds, budget_s):
        rng = random.Random(len(calls))
        return {n: {"median_ms": round(rng.uniform(0.05, 2.0), 4), "iqr_ms": 0.001, "n": 3, "fake": True}
                for n in calls}

    def baseline(self, fn, inputs, outputs, shape):
        return lambda: None

    def context(self):
        import contextlib
        return contextlib.nullcontext()


def _names(wl, kind):
    return [a.name for a in wl.args if a.kind == kind]


def _summary(s: list) -> dict:
    q = statistics.quantiles(s, n=4) if len(s) >= 4 else [min(s), 0, max(s)]
    return {"median_ms": statistics.median(s), "min_ms": min(s), "iqr_ms": q[2] - q[0], "n": len(s)}


def _rel_rmse(out, ref) -> float:
    return float(np.sqrt(np.mean((out.astype(np.float64) - ref) ** 2)) / max(np.sqrt(np.mean(ref ** 2)), 1e-30))


# --------------------------------------------------------------------------- one sweep

def compile_point(target: str, wl, params: dict) -> dict:
    tgt = targets.get(target)
    tpl = wl.template(target)
    art = tgt.compile(tpl.source(tpl.variant_of(params)), params, {})
    if isinstance(art, CompileFailure):
        return {"params": params, "status": "compile_error", "reason": art.reason}
    audit = tgt.audit(art, {})
    if not audit.ok:
        return {"params": params, "status": "audit_failed", "reason": audit.problems[0], "resources": art.resources}
    return {"params": params, "status": "compiled", "cubin": str(art.path),
            "resources": {k: art.resources.get(k) for k in ("registers", "shared_bytes", "spill_store_bytes", "arch")}}


def check_point(dev, wl, target: str, row: dict, shapes, tolerance: Tolerance, seed: int = 7) -> str | None:
    """None when the point's outputs match the reference on every shape, else why not."""
    tpl = wl.template(target)
    for shape in shapes:
        host = wl.make_inputs(shape, wl.distributions[0], seed)
        ref = wl.reference(host, shape)
        arrays = {k: (dev.array(v) if isinstance(v, np.ndarray) else v) for k, v in host.items()}
        for name, shp in wl.out_shapes(shape).items():
            arrays[name] = dev.empty(shp)
        try:
            with dev.context():
                dev.kernel(row["cubin"], wl, arrays, shape, tpl.launch(shape, row["params"]))()
            dev.sync()
        except Exception as exc:
            return f"failed to run at {shape}: {type(exc).__name__}: {exc}"
        for name, r in ref.items():
            rep = compare(dev.get(arrays[name]), r, tolerance)
            if not rep["passed"]:
                return f"wrong at {shape} ({name}: {rep['why']})"
    return None


def sweep(dev, wl, shape, points_by_target: dict, check_shapes, *, tolerance=None, baselines=None,
          rounds=100, budget_s=3.0, cross_check: str | None = None, log=print) -> dict:
    """Compile, check and time every point of every target at ``shape`` in one session with
    the baselines (``wl.baselines['cuda']`` or the given (name, fn) pairs) and the copy probe."""
    tol = tolerance or wl.tolerance
    rows = []
    for target, points in points_by_target.items():
        for p in points:
            row = {"target": target, **compile_point(target, wl, p)}
            if row["status"] == "compiled":
                why = check_point(dev, wl, target, row, check_shapes, tol)
                row["status"], row["reason"] = ("correct", "") if why is None else ("wrong", why)
            rows.append(row)
            log(f"  {target} {p}: {row['status']} {row.get('reason', '')[:160]}")
    host = wl.make_inputs(shape, wl.distributions[0], 11)
    arrays = {k: (dev.array(v) if isinstance(v, np.ndarray) else v) for k, v in host.items()}
    calls, outs, notes = {}, {}, []
    for i, row in enumerate(rows):
        if row["status"] != "correct":
            continue
        mine = dict(arrays)
        for name, shp in wl.out_shapes(shape).items():
            mine[name] = dev.empty(shp)
        tpl = wl.template(row["target"])
        try:
            calls[f"#{i}"] = dev.kernel(row["cubin"], wl, mine, shape, tpl.launch(shape, row["params"]))
            outs[f"#{i}"] = mine
        except Exception as exc:
            row["status"], row["reason"] = "not_timed", f"{type(exc).__name__}: {exc}"
    for name, fn in (baselines if baselines is not None else [(b.name, b.fn) for b in wl.baselines.get("cuda", ())]):
        try:
            mine = {oname: dev.empty(shp) for oname, shp in wl.out_shapes(shape).items()}
            calls[name] = dev.baseline(fn, arrays, mine, shape)
            outs[name] = mine
        except Exception as exc:
            notes.append(f"baseline {name} skipped: {type(exc).__name__}: {exc}"[:300])
    first_in = next(a.name for a in wl.args if a.kind == "in")
    calls["copy"] = dev.copy_probe(arrays[first_in])
    timings = dev.time(calls, rounds, budget_s) if calls else {}
    copy_ms = timings.get("copy", {}).get("median_ms")
    copy_bytes = 2 * 4 * int(np.prod(host[first_in].shape))
    for i, row in enumerate(rows):
        t = timings.get(f"#{i}")
        if not t:
            continue
        row["timing"] = t
        row["gbs"] = wl.bytes_moved(shape) / (t["median_ms"] / 1e3) / 1e9
        row["tflops"] = wl.flops(shape) / (t["median_ms"] / 1e3) / 1e12
        row["vs"] = {n: timings[n]["median_ms"] / t["median_ms"] for n in timings if not n.startswith("#")}
        if copy_ms:   # the kernel's bytes at the copy's pace, over the kernel's time
            row["of_copy"] = (wl.bytes_moved(shape) / copy_bytes * copy_ms) / t["median_ms"]
        if cross_check and cross_check in outs and not dev.fake:   # agreement with a baseline's output
            out = _names(wl, "out")[0]
            row[f"rel_rmse_vs_{cross_check}"] = _rel_rmse(dev.get(outs[f"#{i}"][out]),
                                                           dev.get(outs[cross_check][out]).astype(np.float64))
    best = {}
    for target in points_by_target:
        timed = [r for r in rows if r["target"] == target and "timing" in r]
        if timed:
            b = min(timed, key=lambda r: r["timing"]["median_ms"])
            best[target] = {"params": b["params"], "median_ms": b["timing"]["median_ms"], "vs": b["vs"],
                            "of_copy": b.get("of_copy"), "tflops": b["tflops"], "gbs": b["gbs"]}
    if {"cuda", "ptx"} <= set(best):   # > 1: the PTX seeds' best is faster
        best["ptx_vs_cuda"] = best["cuda"]["median_ms"] / best["ptx"]["median_ms"]
    return {"shape": shape.label(), "rows": [{k: v for k, v in r.items() if k != "cubin"} for r in rows],
            "baselines": {n: t for n, t in timings.items() if not n.startswith("#")}, "best": best,
            "copy_gbs": copy_bytes / (copy_ms / 1e3) / 1e9 if copy_ms else None, "notes": notes,
            "fake_device": dev.fake}


def sample_points(wl, target: str, shape, n: int, seed: str) -> list[dict]:
    """The template's seeds plus ``n`` more legal points at ``shape``."""
    tpl = wl.template(target)
    points = [p for _, p in tpl.seeds() if not tpl.space.violations(p, [shape])]
    rng = random.Random(seed)
    for _ in range(n * 20):
        if len(points) >= len(tpl.seeds()) + n:
            break
        p = tpl.space.sample(rng, [shape])
        if p is not None and p not in points:
            points.append(p)
    return points


# --------------------------------------------------------------------------- ceilings

def ceilings(dev) -> dict:
    """Copy bandwidth (1 GiB device to device, bytes read + written) and the cuBLAS fp32 and
    TF32 rates at 4096^3, measured now on this GPU."""
    if dev.fake:
        return {"copy_gbs": 0.0, "sgemm_tflops": 0.0, "tf32_tflops": 0.0, "fake": True}
    cp = dev.cp
    src = cp.ones(1 << 28, dtype=cp.float32)
    copy = dev.copy_probe(src)
    a = cp.random.standard_normal((4096, 4096), dtype=cp.float32)
    b = cp.random.standard_normal((4096, 4096), dtype=cp.float32)
    c = cp.empty_like(a)
    calls = {"copy": copy, "sgemm": lambda: cp.matmul(a, b, out=c)}
    out = {}
    try:
        import torch
        ta, tb, tc = (torch.as_tensor(x, device="cuda") for x in (a, b, c))
        stream = torch.cuda.ExternalStream(dev.stream.ptr)

        def tf32():
            torch.backends.cuda.matmul.allow_tf32 = True
            with torch.cuda.stream(stream):
                torch.matmul(ta, tb, out=tc)
            torch.backends.cuda.matmul.allow_tf32 = False
        calls["tf32"] = tf32
    except Exception as exc:
        out["tf32_note"] = f"torch TF32 not measured: {type(exc).__name__}: {exc}"
    t = dev.time(calls, 30, 3.0)
    out["copy_gbs"] = 2 * src.nbytes / (t["copy"]["median_ms"] / 1e3) / 1e9
    out["sgemm_tflops"] = 2 * 4096 ** 3 / (t["sgemm"]["median_ms"] / 1e3) / 1e12
    if "tf32" in t:
        out["tf32_tflops"] = 2 * 4096 ** 3 / (t["tf32"]["median_ms"] / 1e3) / 1e12
    return out
