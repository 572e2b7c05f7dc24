"""rmsnorm workload: inputs and reference, design spaces, CPU seeds and tuned points through
the evaluator, naive kernels rejected where intended, one timed run at 4096x4096, CUDA
seeds compiled with nvcc (no GPU needed: compile-only, no spills)."""
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from kernels import workloads
from kernels.harness.evaluator import EvalSettings, Evaluator
from kernels.harness.static import check_source
from kernels.spec import Shape

WL = workloads.get("rmsnorm")
CPU = WL.template("cpu")
CUDA = WL.template("cuda")
ALL_SHAPES = [s for _, s in WL.shapes.correctness()] + list(WL.shapes.typical) + list(WL.shapes.held_out)

# The fastest point measured on the 2-core Zen 3 (AVX2, no AVX-512) development host.
BEST = {"ALGO": "fused", "THREADS": 2, "VEC": 8, "UNROLL": 4, "CHUNK": 16, "NT": 1}
# Points that walk the other code paths: AVX-512 (or its AVX2 fallback) with masked tails,
# scalar with several double accumulators, oversubscribed threads, big chunks, NT peels.
OTHERS = [
    {"ALGO": "two_pass", "THREADS": 4, "VEC": 16, "UNROLL": 2, "CHUNK": 4, "NT": 1},
    {"ALGO": "fused", "THREADS": 8, "VEC": 1, "UNROLL": 4, "CHUNK": 64, "NT": 0},
    {"ALGO": "fused", "THREADS": 2, "VEC": 16, "UNROLL": 1, "CHUNK": 4, "NT": 0},
]

NAIVE_EPS_OUTSIDE_SQRT = r"""
#include <math.h>
#include <stdint.h>
void kernel(const float *x, const float *w, float *y, int64_t rows, int64_t cols, float eps) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float s = 0.0f;
        for (int64_t c = 0; c < cols; c++) s += xr[c] * xr[c];
        float inv = 1.0f / (sqrtf(s / cols) + eps);   /* eps outside the root */
        for (int64_t c = 0; c < cols; c++) y[r * cols + c] = xr[c] * inv * w[c];
    }
}
"""


@pytest.fixture(scope="module")
def evaluator():
    return Evaluator(EvalSettings(timing=False))


def _independent(x, w, eps):
    """RMSNorm from the Euclidean norm, row by row with math.fsum-grade sums."""
    import math
    out = np.empty(x.shape, dtype=np.float64)
    for r in range(x.shape[0]):
        row = [float(v) for v in x[r]]
        ms = math.fsum(v * v for v in row) / len(row)
        inv = 1.0 / math.sqrt(ms + float(np.float32(eps)))
        out[r] = [v * inv * float(g) for v, g in zip(row, w)]
    return out


# --------------------------------------------------------------------------- inputs, reference

def test_reference_matches_an_independent_formula():
    shape = Shape.of(rows=9, cols=37)
    for dist in WL.distributions:
        inputs = WL.make_inputs(shape, dist, 3)
        ref = WL.reference(inputs, shape)["y"]
        assert ref.dtype == np.float64 and ref.shape == (9, 37) and np.isfinite(ref).all()
        np.testing.assert_allclose(ref, _independent(inputs["x"], inputs["w"], inputs["eps"]),
                                   rtol=1e-12, atol=1e-300)


def test_inputs_are_deterministic_float32_and_cover_the_edges():
    for dist in WL.distributions:
        shape = Shape.of(rows=8, cols=1013)
        a, b = WL.make_inputs(shape, dist, 7), WL.make_inputs(shape, dist, 7)
        assert set(a) == {"x", "w", "eps"} and isinstance(a["eps"], float) and 0 < a["eps"] <= 1e-5
        for name in ("x", "w"):
            assert a[name].dtype == np.float32 and a[name].flags.c_contiguous
            assert np.array_equal(a[name], b[name])
        assert a["x"].shape == (8, 1013) and a["w"].shape == (1013,)
        assert not np.array_equal(a["x"], WL.make_inputs(shape, dist, 8)["x"])
    tiny = WL.make_inputs(Shape.of(rows=64, cols=512), "tiny", 0)
    ms = np.mean(tiny["x"].astype(np.float64) ** 2, axis=1)
    assert ms.max() < 1e-5 and ms.min() < tiny["eps"]          # eps decides the result
    deg = WL.make_inputs(Shape.of(rows=8, cols=64), "degenerate", 0)
    ref = WL.reference(deg, Shape.of(rows=8, cols=64))["y"]
    assert (deg["x"][0] == 0).all() and (ref[0] == 0).all()     # a zero row gives zeros, not NaN
    assert np.ptp(deg["x"][1]) == 0 and deg["x"][1, 0] != 0       # a constant row


def test_counts_and_output_shapes():
    s = Shape.of(rows=4096, cols=4096)
    assert WL.out_shapes(s) == {"y": (4096, 4096)}
    assert WL.flops(s) > 4 * 4096 * 4096 - 1 and WL.bytes_moved(s) == 4.0 * (2 * 4096 * 4096 + 4096)
    assert WL.signature("cpu") == ("void kernel(const float *x, const float *w, float *y, "
                                   "int64_t rows, int64_t cols, float eps)")


# --------------------------------------------------------------------------- design spaces

def test_defaults_are_the_plain_seed_and_legal_everywhere():
    d = CPU.space.default()
    assert d["THREADS"] == 1 and d["VEC"] == 1 and d["NT"] == 0 and d["ALGO"] == "two_pass"
    assert CPU.space.violations(d, ALL_SHAPES) == []
    assert CUDA.space.violations(CUDA.space.default(), ALL_SHAPES) == []
    for point in [BEST, *OTHERS]:
        assert CPU.space.violations(point, list(WL.shapes.typical)) == []


def test_constraints_say_why():
    bad = {**CPU.space.default(), "NT": 1}
    assert any("non-temporal" in p for p in CPU.space.violations(bad, list(WL.shapes.typical)))
    crowded = {**CPU.space.default(), "THREADS": 8, "CHUNK": 64}
    assert any("threads would get no work" in p for p in CPU.space.violations(crowded, [Shape.of(rows=67, cols=1013)]))


def test_cuda_launch_geometry():
    s = Shape.of(rows=333, cols=3001)
    assert CUDA.launch(s, {"ALGO": "rowwise", "BLOCK": 512, "VEC": 4}) == ((333, 1, 1), (512, 1, 1), 0)
    assert CUDA.launch(s, {"ALGO": "warp", "BLOCK": 256, "VEC": 1}) == ((42, 1, 1), (256, 1, 1), 0)


# --------------------------------------------------------------------------- CPU seeds and points

@pytest.mark.parametrize("variant", list(CPU.variants))
def test_every_cpu_seed_is_correct(evaluator, variant):
    source, params = next((src, p) for src, p in CPU.seeds() if p["ALGO"] == variant)
    assert check_source(source, "c") == []
    out = evaluator.evaluate(source, params, WL, "cpu")
    assert out.status == "ok", out.reason


@pytest.mark.parametrize("point", OTHERS, ids=lambda p: "-".join(f"{k}{v}" for k, v in p.items()))
def test_tuned_points_are_correct(evaluator, point):
    out = evaluator.evaluate(CPU.source(point["ALGO"]), point, WL, "cpu")
    assert out.status == "ok", out.reason


def test_best_point_is_correct_on_the_held_out_shapes_too():
    ev = Evaluator(EvalSettings(timing=False, extra_shapes=(Shape.of(rows=333, cols=3001),)))
    out = ev.evaluate(CPU.source(BEST["ALGO"]), BEST, WL, "cpu")
    assert out.status == "ok", out.reason


def test_avx512_paths_compile():
    """This host has no AVX-512, so VEC=16 runs the AVX2 fallback here; build the AVX-512
    code itself for an AVX-512 CPU to keep it honest."""
    from kernels.targets.cpu import BASE_FLAGS
    from kernels.targets.base import param_prelude
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    flags = [f for f in BASE_FLAGS if f not in ("-march=native", "-shared", "-fPIC")]
    for variant in CPU.variants:
        for nt in (1,):
            point = {**BEST, "ALGO": variant, "VEC": 16, "NT": nt}
            src = param_prelude(point) + CPU.source(variant)
            r = subprocess.run(["gcc", *flags, "-march=skylake-avx512", "-Werror", "-c", "-x", "c", "-",
                                "-o", "/dev/null"], input=src, capture_output=True, text=True, timeout=120)
            assert r.returncode == 0, r.stderr


# --------------------------------------------------------------------------- wrong kernels

def test_eps_outside_the_root_is_wrong_on_tiny_inputs():
    ev = Evaluator(EvalSettings(timing=False, shapes=(Shape.of(rows=67, cols=1013),)))
    out = ev.evaluate(NAIVE_EPS_OUTSIDE_SQRT, {}, WL, "cpu")
    assert out.status == "wrong" and "tiny" in out.reason, out.reason


def test_forgetting_eps_is_wrong_and_zero_rows_would_catch_it():
    src = NAIVE_EPS_OUTSIDE_SQRT.replace("(sqrtf(s / cols) + eps)", "sqrtf(s / cols)")
    ev = Evaluator(EvalSettings(timing=False, seeds=1, shapes=(Shape.of(rows=5, cols=4099),)))
    out = ev.evaluate(src, {}, WL, "cpu")
    assert out.status == "wrong", out.reason
    # the same formula on the degenerate inputs: 0 / sqrt(0) on the zero rows
    from kernels.harness.verify import compare
    shape = Shape.of(rows=5, cols=4099)
    inputs = WL.make_inputs(shape, "degenerate", 0)
    x = inputs["x"]
    with np.errstate(invalid="ignore", divide="ignore"):
        y = x / np.sqrt(np.mean(x * x, axis=1, keepdims=True, dtype=np.float32)) * inputs["w"]
    report = compare(y.astype(np.float32), WL.reference(inputs, shape)["y"], WL.tolerance)
    assert not report["passed"] and report["nonfinite"] > 0


# --------------------------------------------------------------------------- timed

def test_best_point_is_timed_against_the_baselines():
    ev = Evaluator(EvalSettings(seeds=1, shapes=(Shape.of(rows=5, cols=4099),), min_calls=10,
                                timing_budget_s=0.5))
    out = ev.evaluate(CPU.source(BEST["ALGO"]), BEST, WL, "cpu")
    # The physics check holds the time against this host's copy bandwidth, measured once per
    # cache under whatever load the host had then: a busy host can under-measure it and flag
    # an honest memory-bound kernel. The output at 4096x4096 was verified before that check.
    assert out.status == "ok" or (out.status == "suspicious" and "bandwidth ceiling" in out.reason), out.reason
    print(f"\nrmsnorm {BEST} at 4096x4096: {out.reason} speedups {out.speedup}")
    assert out.speedup.get("numpy", 0) > 1.0, out.speedup


# --------------------------------------------------------------------------- CUDA (compile only)

def _nvcc():
    return shutil.which("nvcc") or shutil.which("/usr/local/cuda/bin/nvcc")


@pytest.mark.skipif(_nvcc() is None, reason="nvcc is not installed on this host")
def test_every_cuda_variant_compiles_for_sm90_without_spills(tmp_path):
    # each variant at the corners of its space: fewest threads with scalar loads, and the
    # 1024-thread block (64 registers a thread at most) with float4 loads
    points = [{"ALGO": a, "BLOCK": b, "VEC": v} for a in CUDA.variants for b, v in ((128, 1), (1024, 4))]
    assert all(CUDA.space.violations(p, ALL_SHAPES) == [] for p in points)
    sig = re.compile(r'extern "C" __global__ __launch_bounds__\(BLOCK\) void kernel\('
                     r'const float \*x, const float \*w, float \*y, int64_t rows, int64_t cols, float eps\)')
    for variant in CUDA.variants:
        assert check_source(CUDA.source(variant), "cuda") == []
        assert sig.search(CUDA.source(variant)), f"{variant}: entry point differs from the workload's ABI"

    def build(p):
        out = tmp_path / f"{p['ALGO']}_{p['BLOCK']}_{p['VEC']}.cubin"
        r = subprocess.run([_nvcc(), "-cubin", "-arch=sm_90", "-O3", "-Xptxas", "-v", f"-DBLOCK={p['BLOCK']}",
                            f"-DVEC={p['VEC']}", "-o", str(out), str(CUDA.folder / CUDA.variants[p["ALGO"]])],
                           capture_output=True, text=True, timeout=300)
        return p, r

    with ThreadPoolExecutor(2) as pool:
        for p, r in pool.map(build, points):
            log = r.stdout + r.stderr
            assert r.returncode == 0, (p, log)
            assert "warning" not in log.lower(), (p, log)
            spills = [int(n) for n in re.findall(r"(\d+) bytes spill (?:stores|loads)", log)]
            assert spills and not any(spills), (p, log)


@pytest.mark.skipif(_nvcc() is None, reason="nvcc is not installed on this host")
def test_cuda_seeds_pass_the_evaluator():
    """Without a GPU: static checks, nvcc, the audit, then "compiled_only"; on a GPU host the
    same call runs the correctness cases and must come back "ok"."""
    ev = Evaluator(EvalSettings(timing=False))
    for source, params in CUDA.seeds():
        out = ev.evaluate(source, params, WL, "cuda")
        assert out.status in ("compiled_only", "ok"), (params, out.reason)
