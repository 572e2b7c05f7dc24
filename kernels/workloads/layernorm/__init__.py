"""layernorm: y[r, :] = (x[r, :] - mean) / sqrt(var + eps) * gamma + beta for every row, float32."""
from pathlib import Path

import numpy as np

from kernels.spec import (Arg, Baseline, Constraint, DesignSpace, Param, Shape,
                          Template, Tolerance, Workload, rng_for)
from kernels.workloads.layernorm.reference import reference  # noqa: E402
from kernels.workloads import rowwise  # noqa: E402

HERE = Path(__file__).parent
DISTRIBUTIONS = ("normal", "large", "tiny", "mixed", "constant")
EPS = {"normal": 1e-5, "large": 1e-5, "tiny": 1e-6, "mixed": 1e-5, "constant": 1e-5}


def make_inputs(shape: Shape, distribution: str, seed: int) -> dict:
    rows, cols = shape["rows"], shape["cols"]
    rng = rng_for(seed, shape, distribution)
    if distribution == "normal":
        x = rng.standard_normal((rows, cols))
    elif distribution == "large":
        # |mean| 3e2..3e3 with a std 30..63x smaller. A one-pass E[x^2] - E[x]^2 in float32
        # cancels catastrophically (error ~ (mean/std)^2 ulp); a corrected two-pass or a
        # shifted Welford stays ~1e-6, and torch's native_layer_norm ~2.5e-5 (within bounds).
        mean = rng.choice([-1.0, 1.0], (rows, 1)) * 10.0 ** rng.uniform(2.5, 3.5, (rows, 1))
        std = np.abs(mean) * 10.0 ** -rng.uniform(1.5, 1.8, (rows, 1))
        x = mean + std * rng.standard_normal((rows, cols))
    elif distribution == "tiny":  # var ~ 1e-12..1e-6, the size of eps: eps decides the result
        x = (rng.standard_normal((rows, cols)) + rng.uniform(-1, 1, (rows, 1))) * 10.0 ** rng.uniform(-6, -3, (rows, 1))
    elif distribution == "mixed":  # both signs, 1% outliers that dominate the variance
        x = rng.uniform(-3, 3, (rows, cols))
        hit = rng.random((rows, cols)) < 0.01
        x[hit] = rng.choice([-1.0, 1.0], hit.sum()) * rng.uniform(1e2, 1e3, hit.sum())
    elif distribution == "constant":  # var == 0: y must be exactly beta (rstd = 1/sqrt(eps) ~ 316)
        x = rng.standard_normal((rows, cols))
        for r in range(rows):
            if r % 3 == 0:
                x[r] = 0.0 if r % 2 == 0 else rng.choice([-1.0, 1.0]) * 10.0 ** rng.uniform(-3, 3)
            elif r % 3 == 1:
                x[r] = rng.choice([-1.0, 1.0]) * 10.0 ** rng.uniform(-3, 3)
    else:
        raise ValueError(f"layernorm has no distribution {distribution!r}")
    return {"x": np.ascontiguousarray(x, dtype=np.float32),
            "gamma": np.ascontiguousarray(rng.normal(1.0, 0.5, cols), dtype=np.float32),
            "beta": np.ascontiguousarray(rng.normal(0.0, 0.5, cols), dtype=np.float32),
            "eps": EPS[distribution]}


SPACE = DesignSpace(
    params=(
        Param("ALGO", "variant", choices=("two_pass", "welford"),
              help="two_pass: corrected two-pass (sum, then shifted sum and sum of squares, then write); "
                   "welford: one statistics pass with per-lane shifted Welford, then write"),
        Param("THREADS", "choice", choices=(1, 2, 4, 8), help="OpenMP threads"),
        Param("VEC", "choice", choices=(1, 8, 16),
              help="vector width: scalar, AVX2 or AVX-512 (falls back to 8)"),
        Param("UNROLL", "choice", choices=(1, 2, 4), help="independent accumulators in the reductions"),
        Param("CHUNK", "choice", choices=(1, 4, 16, 64), help="rows per OpenMP static chunk"),
        Param("NT", "bool", help="non-temporal (streaming) stores for y; vector paths only"),
    ),
    constraints=(
        rowwise.CHUNK_FITS,
        Constraint("NT == 0 or VEC > 1", "non-temporal stores need a vector path (VEC 8 or 16)"),
    ),
)

WORKLOAD = Workload(
    name="layernorm",
    description="Row-wise LayerNorm of a float32 matrix (rows x cols) with gamma and beta of length cols: "
                "y = (x - mean) / sqrt(var + eps) * gamma + beta, var the biased variance.",
    args=(Arg("x", "in", ("rows", "cols")), Arg("gamma", "in", ("cols",)), Arg("beta", "in", ("cols",)),
          Arg("y", "out", ("rows", "cols")), Arg("rows", "dim"), Arg("cols", "dim"), Arg("eps", "f32")),
    independent=("rows",),
    shapes=rowwise.SHAPES,
    distributions=DISTRIBUTIONS,
    # The seeds stay within ~2e-6 (2% of the bound) on every distribution; the bound leaves
    # room for a mean kept in float32 (torch: ~25% of it on "large") while a one-pass
    # E[x^2] - E[x]^2 fails "large" by 10-1000x and a float sum/n mean fails "constant".
    tolerance=Tolerance(atol=1e-4, rtol=1e-4),
    make_inputs=make_inputs,
    reference=reference,
    # sum, (x - m)^2 (sub + fma), normalise (sub, mul) and the affine fma: ~8 per element
    flops=lambda s: 8.0 * s["rows"] * s["cols"] + 4.0 * s["rows"],
    bytes_moved=lambda s: 4.0 * (2 * s["rows"] * s["cols"] + 2 * s["cols"]),
    out_shapes=lambda s: {"y": (s["rows"], s["cols"])},
    templates={
        "cpu": Template("cpu", {"two_pass": "cpu_two_pass.c", "welford": "cpu_welford.c"}, SPACE,
                        variant_param="ALGO", folder=HERE),
        "cuda": Template("cuda", {"rowwise": "cuda_rowwise.cu", "warp": "cuda_warp.cu"}, rowwise.NORM_CUDA_SPACE,
                         variant_param="ALGO", folder=HERE, launch=rowwise.cuda_launch),
    },
    baselines={
        "cpu": (
            Baseline("numpy", "kernels.workloads.layernorm.baselines:numpy_layernorm",
                     description="NumPy with out= buffers: mean, subtract, einsum sum of squares, scale, affine"),
            Baseline("torch", "kernels.workloads.layernorm.baselines:torch_layernorm", strong=True,
                     requires="torch",
                     description="aten.native_layer_norm.out writing y in place (the kernel behind F.layer_norm)"),
            Baseline("torch_compile", "kernels.workloads.layernorm.baselines:torch_compiled_layernorm",
                     strong=True, requires="torch", default=False,
                     description="torch.compile of F.layer_norm (Inductor C++/OpenMP), copied into y"),
        ),
        "cuda": (
            Baseline("cupy", "kernels.workloads.layernorm.baselines:cupy_layernorm", strong=True, requires="cupy",
                     description="CuPy elementwise ops and row reductions with out= buffers"),
            Baseline("torch_cuda", "kernels.workloads.layernorm.baselines:torch_cuda_layernorm", strong=True,
                     requires="torch", description="aten.native_layer_norm.out on the GPU"),
        ),
    },
)
