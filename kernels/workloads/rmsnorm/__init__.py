"""rmsnorm: y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * w for every row, float32."""
from pathlib import Path

import numpy as np

from kernels.spec import (Arg, Baseline, Constraint, DesignSpace, Param, Shape,
                          Template, Tolerance, Workload, rng_for)
from kernels.workloads.rmsnorm.reference import reference  # noqa: E402
from kernels.workloads import rowwise  # noqa: E402

HERE = Path(__file__).parent
DISTRIBUTIONS = ("normal", "large", "tiny", "mixed", "degenerate")
EPS = {"normal": 1e-6, "large": 1e-5, "tiny": 1e-6, "mixed": 1e-5, "degenerate": 1e-6}


def make_inputs(shape: Shape, distribution: str, seed: int) -> dict:
    rows, cols = shape["rows"], shape["cols"]
    rng = rng_for(seed, shape, distribution)
    if distribution == "normal":
        x = rng.standard_normal((rows, cols))
    elif distribution == "large":  # |x| ~ 1e3..1e4: squares ~1e8, sums ~1e11 in float32
        x = rng.standard_normal((rows, cols)) * 1e3 + rng.uniform(-1e4, 1e4, (rows, 1))
    elif distribution == "tiny":  # mean(x^2) ~ 1e-12..1e-6, the size of eps: eps decides the result
        x = rng.standard_normal((rows, cols)) * 10.0 ** rng.uniform(-6, -3, (rows, 1))
    elif distribution == "mixed":  # both signs, 1% outliers that dominate the mean square
        x = rng.uniform(-3, 3, (rows, cols))
        hit = rng.random((rows, cols)) < 0.01
        x[hit] = rng.choice([-1.0, 1.0], hit.sum()) * rng.uniform(1e2, 1e3, hit.sum())
    elif distribution == "degenerate":  # rows of zeros (y must be 0, not NaN), constants, spikes
        x = rng.standard_normal((rows, cols))
        for r in range(rows):
            kind = r % 4
            if kind == 0:
                x[r] = 0.0
            elif kind == 1:
                x[r] = rng.choice([-1.0, 1.0]) * 10.0 ** rng.uniform(-3, 3)
            elif kind == 2:
                x[r] = 0.0
                x[r, rng.integers(0, cols)] = rng.choice([-1.0, 1.0]) * 10.0 ** rng.uniform(-3, 3)
    else:
        raise ValueError(f"rmsnorm has no distribution {distribution!r}")
    w = rng.normal(1.0, 0.5, cols)
    return {"x": np.ascontiguousarray(x, dtype=np.float32),
            "w": np.ascontiguousarray(w, dtype=np.float32),
            "eps": EPS[distribution]}


SPACE = DesignSpace(
    params=(
        Param("ALGO", "variant", choices=("two_pass", "fused"),
              help="two_pass: sum of squares then scale, per row; fused: the write of row r "
                   "also sums the squares of row r+1 (pipelined within a chunk)"),
        Param("THREADS", "choice", choices=(1, 2, 4, 8), help="OpenMP threads"),
        Param("VEC", "choice", choices=(1, 8, 16),
              help="vector width: scalar (double accumulators), AVX2 or AVX-512 (falls back to 8)"),
        Param("UNROLL", "choice", choices=(1, 2, 4), help="independent accumulators in the sum of squares"),
        Param("CHUNK", "choice", choices=(1, 4, 16, 64), help="rows per OpenMP static chunk"),
        Param("NT", "bool", help="non-temporal (streaming) stores for y; vector paths only"),
    ),
    constraints=(
        rowwise.CHUNK_FITS,
        Constraint("NT == 0 or VEC > 1", "non-temporal stores need a vector path (VEC 8 or 16)"),
    ),
)

WORKLOAD = Workload(
    name="rmsnorm",
    description="Row-wise RMSNorm of a float32 matrix (rows x cols) with a weight of length cols: "
                "y = x / sqrt(mean(x^2) + eps) * w.",
    args=(Arg("x", "in", ("rows", "cols")), Arg("w", "in", ("cols",)), Arg("y", "out", ("rows", "cols")),
          Arg("rows", "dim"), Arg("cols", "dim"), Arg("eps", "f32")),
    independent=("rows",),
    shapes=rowwise.SHAPES,
    distributions=DISTRIBUTIONS,
    # Every output is a product x * inv * w, so its error is relative: a few ulp plus the
    # rounding of the sum of squares. Every point of the CPU space stays under 4% of this
    # bound (worst: constant rows summed in one float accumulator); a sequential float sum
    # over 4099 columns reaches ~13%. rtol carries the check, atol only covers zeros.
    tolerance=Tolerance(atol=1e-5, rtol=1e-4),
    make_inputs=make_inputs,
    reference=reference,
    # x*x (fma) per element in the sum, x*inv*w per element in the write, plus the rsqrt
    flops=lambda s: 4.0 * s["rows"] * s["cols"] + 3.0 * s["rows"],
    bytes_moved=lambda s: 4.0 * (2 * s["rows"] * s["cols"] + s["cols"]),
    out_shapes=lambda s: {"y": (s["rows"], s["cols"])},
    templates={
        "cpu": Template("cpu", {"two_pass": "cpu_two_pass.c", "fused": "cpu_fused.c"}, SPACE,
                        variant_param="ALGO", folder=HERE),
        "cuda": Template("cuda", {"rowwise": "cuda_rowwise.cu", "warp": "cuda_warp.cu"}, rowwise.NORM_CUDA_SPACE,
                         variant_param="ALGO", folder=HERE, launch=rowwise.cuda_launch),
        "ptx": Template("ptx", {"warp": "ptx_rmsnorm.ptx", "block": "ptx_rmsnorm.ptx"}, rowwise.ptx_space(reload=True),
                        variant_param="ALGO", folder=HERE, launch=rowwise.cuda_launch),
    },
    baselines={
        "cpu": (
            Baseline("numpy", "kernels.workloads.rmsnorm.baselines:numpy_rmsnorm",
                     description="NumPy with out= buffers: einsum row sums of squares, rsqrt, two multiplies"),
            Baseline("torch", "kernels.workloads.rmsnorm.baselines:torch_rmsnorm", strong=True,
                     requires="torch",
                     description="eager torch with out= buffers: vector_norm, rsqrt, mul(out=y), mul_ "
                                 "(faster on CPU than F.rms_norm, which cannot write into y)"),
            Baseline("torch_compile", "kernels.workloads.rmsnorm.baselines:torch_compiled_rmsnorm",
                     strong=True, requires="torch", default=False,
                     description="torch.compile of F.rms_norm (Inductor C++/OpenMP), copied into y"),
        ),
        "cuda": (
            Baseline("cupy", "kernels.workloads.rmsnorm.baselines:cupy_rmsnorm", strong=True, requires="cupy",
                     description="CuPy elementwise ops and row reductions with out= buffers"),
            Baseline("torch_cuda", "kernels.workloads.rmsnorm.baselines:torch_cuda_rmsnorm", strong=True,
                     requires="torch", description="F.rms_norm on the GPU, copied into y"),
        ),
    },
)
