"""rmsnorm, what is particular to it (test_contract.py runs every workload through the
common checks: inputs, reference, spaces, seeds, the points in points.py, AVX-512, CUDA):
the reference against an independent formula, and its edge inputs, and
naive kernels rejected where intended.
(What it shares with the other row-wise normalisations: test_rowwise.py.)"""
import math

import numpy as np

from kernels import workloads
from kernels.harness.evaluator import EvalSettings, Evaluator
from kernels.harness.verify import compare
from kernels.spec import Shape

WL = workloads.get("rmsnorm")

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


def _independent(x, w, eps):
    """RMSNorm from the Euclidean norm, row by row with math.fsum-grade sums."""
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
        np.testing.assert_allclose(WL.reference(inputs, shape)["y"], _independent(inputs["x"], inputs["w"],
                                                                                   inputs["eps"]),
                                   rtol=1e-12, atol=1e-300)


def test_inputs_have_the_abis_shapes_and_cover_the_edges():
    for dist in WL.distributions:
        a = WL.make_inputs(Shape.of(rows=8, cols=1013), dist, 7)
        assert 0 < a["eps"] <= 1e-5 and a["x"].shape == (8, 1013) and a["w"].shape == (1013,)
    tiny = WL.make_inputs(Shape.of(rows=64, cols=512), "tiny", 0)
    ms = np.mean(tiny["x"].astype(np.float64) ** 2, axis=1)
    assert ms.max() < 1e-5 and ms.min() < tiny["eps"]          # eps decides the result
    deg = WL.make_inputs(Shape.of(rows=8, cols=64), "degenerate", 0)
    ref = WL.reference(deg, Shape.of(rows=8, cols=64))["y"]
    assert (deg["x"][0] == 0).all() and (ref[0] == 0).all()     # a zero row gives zeros, not NaN
    assert np.ptp(deg["x"][1]) == 0 and deg["x"][1, 0] != 0       # a constant row


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
    shape = Shape.of(rows=5, cols=4099)
    inputs = WL.make_inputs(shape, "degenerate", 0)
    x = inputs["x"]
    with np.errstate(invalid="ignore", divide="ignore"):
        y = x / np.sqrt(np.mean(x * x, axis=1, keepdims=True, dtype=np.float32)) * inputs["w"]
    report = compare(y.astype(np.float32), WL.reference(inputs, shape)["y"], WL.tolerance)
    assert not report["passed"] and report["nonfinite"] > 0
