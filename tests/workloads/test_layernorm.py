"""layernorm, what is particular to it (test_contract.py runs every workload through the
common checks: inputs, reference, spaces, seeds, the points in points.py, AVX-512, CUDA):
the reference against an independent formula, and its edge inputs, and
a one-pass variance rejected on the large-mean inputs.
(What it shares with the other row-wise normalisations: test_rowwise.py.)"""
import math

import numpy as np

from kernels import workloads
from kernels.harness.evaluator import EvalSettings, Evaluator
from kernels.harness.verify import compare
from kernels.spec import Shape

WL = workloads.get("layernorm")

NAIVE_ONE_PASS = r"""
#include <math.h>
#include <stdint.h>
void kernel(const float *x, const float *gamma, const float *beta, float *y, int64_t rows, int64_t cols,
            float eps) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float s = 0.0f, q = 0.0f;
        for (int64_t c = 0; c < cols; c++) { s += xr[c]; q += xr[c] * xr[c]; }
        float mean = s / cols, var = q / cols - mean * mean;   /* E[x^2] - E[x]^2 */
        float rstd = 1.0f / sqrtf((var > 0.0f ? var : 0.0f) + eps);
        for (int64_t c = 0; c < cols; c++) y[r * cols + c] = (xr[c] - mean) * rstd * gamma[c] + beta[c];
    }
}
"""


def _independent(x, g, b, eps):
    """LayerNorm row by row with math.fsum sums and the textbook variance."""
    out = np.empty(x.shape, dtype=np.float64)
    for r in range(x.shape[0]):
        row = [float(v) for v in x[r]]
        mean = math.fsum(row) / len(row)
        var = math.fsum((v - mean) ** 2 for v in row) / len(row)
        rstd = 1.0 / math.sqrt(var + float(np.float32(eps)))
        out[r] = [(v - mean) * rstd * float(gg) + float(bb) for v, gg, bb in zip(row, g, b)]
    return out


# --------------------------------------------------------------------------- inputs, reference

def test_reference_matches_an_independent_formula():
    shape = Shape.of(rows=9, cols=37)
    for dist in WL.distributions:
        inputs = WL.make_inputs(shape, dist, 3)
        np.testing.assert_allclose(WL.reference(inputs, shape)["y"],
                                   _independent(inputs["x"], inputs["gamma"], inputs["beta"], inputs["eps"]),
                                   rtol=1e-9, atol=1e-12)


def test_inputs_have_the_abis_shapes_and_cover_the_edges():
    for dist in WL.distributions:
        a = WL.make_inputs(Shape.of(rows=8, cols=1013), dist, 7)
        assert 0 < a["eps"] <= 1e-5
        assert a["x"].shape == (8, 1013) and a["gamma"].shape == (1013,) and a["beta"].shape == (1013,)
    shape = Shape.of(rows=64, cols=512)
    large = WL.make_inputs(shape, "large", 0)["x"].astype(np.float64)
    ratio = np.abs(large.mean(axis=1)) / large.std(axis=1)
    assert ratio.min() > 20 and np.abs(large.mean(axis=1)).min() > 250   # large mean, small variance
    tiny = WL.make_inputs(shape, "tiny", 0)
    assert tiny["x"].astype(np.float64).var(axis=1).max() < 1e-5            # eps decides the result
    const = WL.make_inputs(Shape.of(rows=6, cols=64), "constant", 0)
    ref = WL.reference(const, Shape.of(rows=6, cols=64))["y"]
    for r in (0, 1, 3, 4):                                                 # var == 0: y is exactly beta
        assert np.ptp(const["x"][r]) == 0 and np.array_equal(ref[r], const["beta"].astype(np.float64))


# --------------------------------------------------------------------------- wrong kernels

def test_one_pass_variance_is_wrong_on_large_means():
    ev = Evaluator(EvalSettings(timing=False, shapes=(Shape.of(rows=67, cols=1013),)))
    out = ev.evaluate(NAIVE_ONE_PASS, {}, WL, "cpu")
    assert out.status == "wrong" and "large" in out.reason, out.reason


def test_a_float_sum_over_n_mean_misses_beta_on_constant_rows():
    """The numpy recipe (float32 mean, subtract, scale) on rows of one repeated value: the
    mean is off by an ulp and rstd = 1/sqrt(eps) ~ 316 blows it up."""
    shape = Shape.of(rows=67, cols=1013)
    inputs = WL.make_inputs(shape, "constant", 0)
    x, eps = inputs["x"], np.float32(inputs["eps"])
    mean = np.mean(x, axis=1, keepdims=True, dtype=np.float32)
    var = np.mean((x - mean) ** 2, axis=1, keepdims=True, dtype=np.float32)
    y = (x - mean) / np.sqrt(var + eps) * inputs["gamma"] + inputs["beta"]
    assert not compare(y.astype(np.float32), WL.reference(inputs, shape)["y"], WL.tolerance)["passed"]
