"""The chunked CUDA KDA kernel without a GPU: its NumPy model (the same chunks, secondary
blocks, factorisation, order of products and TF32 rounding) matches the float64 reference
on awkward shapes and every distribution; the kernel's legal points compile for sm_90
without spills; its launch fits the serving shapes."""
import random

import numpy as np
import pytest

from kernels import workloads
from kernels.spec import Shape
from kernels.targets.base import Artifact
from kernels.targets.cuda import CudaTarget, nvcc_path
from kernels.workloads.kda.chunked_model import kda_chunked, tf32
from kernels.workloads.kda.reference import reference

KDA = workloads.get("kda")
TEMPLATE = KDA.template("cuda")
SERVING = [Shape.of(B=b, T=t, H=h, K=128, V=128) for b in (1, 8) for t in (4096, 8192) for h in (16, 32)]
needs_nvcc = pytest.mark.skipif(nvcc_path() is None, reason="nvcc is not installed on this host")


def _rel_rmse(out, ref):
    return float(np.sqrt(np.mean((out - ref) ** 2)) / max(np.sqrt(np.mean(ref ** 2)), 1e-30))


def _run(shape, dist, chunk, prec, seed=3):
    inp = KDA.make_inputs(shape, dist, seed)
    out = kda_chunked(inp["q"], inp["k"], inp["v"], inp["g"], inp["beta"], inp["scale"], chunk, prec)
    return _rel_rmse(out, reference(inp, shape)["o"]), np.isfinite(out).all()


@pytest.mark.parametrize("dist", KDA.distributions)
@pytest.mark.parametrize("shape", [Shape.of(B=2, T=37, H=3, K=33, V=17), Shape.of(B=1, T=129, H=1, K=65, V=31),
                                   Shape.of(B=1, T=3, H=1, K=2, V=5)], ids=str)
def test_the_chunked_model_matches_the_reference_in_fp32_and_3xtf32(shape, dist):
    for chunk in (16, 64):
        for prec in (0, 3):
            err, finite = _run(shape, dist, chunk, prec)
            assert finite and err < KDA.tolerance.rel_rmse / 20, (chunk, prec, err)


def test_one_tf32_product_is_outside_the_default_tolerance_but_within_1e_3():
    errs = [_run(Shape.of(B=1, T=129, H=1, K=65, V=31), d, 64, 1)[0] for d in ("normal", "beta_one")]
    assert all(KDA.tolerance.rel_rmse < e < 1e-3 for e in errs), errs


def test_tf32_rounds_to_ten_mantissa_bits_to_nearest():
    x = np.array([1.0 + 2 ** -11, 1.0 + 2 ** -10 + 2 ** -12, -3.0, np.inf], np.float32)
    assert tf32(x).tolist() == [1.0 + 2 ** -10, 1.0 + 2 ** -10, -3.0, np.inf]


def test_fast_decay_over_a_long_chunk_never_overflows():
    shape = Shape.of(B=1, T=64, H=1, K=8, V=4)
    inp = KDA.make_inputs(shape, "fast_decay", 0)
    inp["g"] = np.full_like(inp["g"], -9.0)            # 64 steps: e^(-576) across the chunk
    out = kda_chunked(inp["q"], inp["k"], inp["v"], inp["g"], inp["beta"], inp["scale"], 64, 3)
    assert np.isfinite(out).all() and _rel_rmse(out, reference(inp, shape)["o"]) < 1e-5


@pytest.mark.parametrize("shape", SERVING, ids=str)
def test_the_default_chunked_point_fits_the_serving_shapes(shape):
    params = {**TEMPLATE.space.default(), "ALGO": "chunked"}
    assert TEMPLATE.space.violations(params, [shape]) == []
    grid, block, shared = TEMPLATE.launch(shape, params)
    assert grid == (128 // params["BLOCK_V"], shape["B"] * shape["H"], 1) and block == (128, 1, 1)
    assert shared <= 227 * 1024


def _chunked_points(n):
    rng = random.Random("kda-chunked")
    shapes = [KDA.shapes.typical[0], SERVING[0]]
    legal = []
    for c in (64, 32, 16):
        for bv in (16, 32, 64):
            for th in (128, 256):
                for prec in (3, 1, 0):
                    p = {**TEMPLATE.space.default(), "ALGO": "chunked", "CHUNK": c, "BLOCK_V": bv,
                         "THREADS": th, "PREC": prec}
                    if not TEMPLATE.space.violations(p, shapes):
                        legal.append(p)
    return rng.sample(legal, n)


@needs_nvcc
@pytest.mark.parametrize("params", _chunked_points(6), ids=lambda p: f"C{p['CHUNK']}-BV{p['BLOCK_V']}-T{p['THREADS']}-P{p['PREC']}")
def test_chunked_points_compile_for_sm90_without_spills(params):
    target = CudaTarget()
    art = target.compile(TEMPLATE.source("chunked"), params, {"arch": "sm_90"})
    assert isinstance(art, Artifact), art.reason
    assert art.resources["spill_store_bytes"] == 0 and art.resources["stack_bytes"] == 0
    assert target.audit(art, {}).ok
