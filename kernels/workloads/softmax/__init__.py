"""softmax: y[r, :] = exp(x[r, :] - max) / sum(exp(x[r, :] - max)) for every row, float32."""
from pathlib import Path

import numpy as np

from kernels.spec import (Arg, Baseline, Constraint, DesignSpace, Param, Shape,
                          Template, Tolerance, Workload, rng_for)
from kernels.workloads.softmax.reference import reference  # noqa: E402
from kernels.workloads import rowwise  # noqa: E402

HERE = Path(__file__).parent
DISTRIBUTIONS = ("normal", "large", "tiny", "mixed", "masked")


def make_inputs(shape: Shape, distribution: str, seed: int) -> dict:
    rows, cols = shape["rows"], shape["cols"]
    rng = rng_for(seed, shape, distribution)
    if distribution == "normal":
        x = rng.standard_normal((rows, cols))
    elif distribution == "large":  # logits far from zero: exp overflows without the max shift
        x = rng.standard_normal((rows, cols)) * 30.0 + rng.choice([-80.0, 80.0], size=(rows, 1))
    elif distribution == "tiny":
        x = rng.standard_normal((rows, cols)) * 1e-6
    elif distribution == "mixed":  # mostly flat with a few dominant entries per row
        x = rng.uniform(-5, 5, (rows, cols))
        x[rng.random((rows, cols)) < 0.01] = 40.0
    elif distribution == "masked":  # attention-style masks; every row keeps one finite entry
        x = rng.standard_normal((rows, cols)) * 3
        x[rng.random((rows, cols)) < 0.3] = -np.inf
        x[:, rng.integers(0, cols)] = rng.standard_normal(rows)
    else:
        raise ValueError(f"softmax has no distribution {distribution!r}")
    return {"x": np.ascontiguousarray(x, dtype=np.float32)}


SPACE = DesignSpace(
    params=(
        Param("ALGO", "variant", choices=("two_pass", "online", "staged"),
              help="algorithm template: two_pass (max, exp+sum, scale), online (running max and sum), "
                   "staged (exp once into an L1 buffer, the cheap 2^t exp)"),
        Param("THREADS", "choice", choices=(1, 2, 4, 8), help="OpenMP threads"),
        Param("VEC", "choice", choices=(1, 8, 16), help="vector width: scalar, AVX2 or AVX-512"),
        Param("FAST_EXP", "bool", help="scalar loops: polynomial exp instead of libm expf"),
        Param("CHUNK", "choice", choices=(1, 4, 16, 64), help="rows per OpenMP chunk (static schedule; dynamic in staged)"),
        Param("NT", "bool", help="non-temporal (streaming) stores for y; vector paths only"),
        Param("PF", "bool", help="prefetch the next row while computing this one; vector paths only"),
    ),
    constraints=(
        rowwise.CHUNK_FITS,
        Constraint("NT == 0 or VEC > 1", "non-temporal stores need a vector path (VEC 8 or 16)"),
        Constraint("PF == 0 or VEC > 1", "the next-row prefetch is in the vector paths (VEC 8 or 16)"),
        Constraint("ALGO != 'staged' or VEC > 1", "the staged variant is vector-only (VEC 8 or 16)"),
    ),
)

CUDA_SPACE = DesignSpace(
    params=(
        Param("ALGO", "variant", choices=("rowwise", "warp"),
              help="rowwise: one block per row; warp: one warp per row, online max/sum"),
        Param("BLOCK", "choice", choices=(128, 256, 512, 1024), default=256, help="threads per block"),
        Param("VEC", "choice", choices=(4, 1), help="float4 loads on the aligned middle of a row, or scalar"),
    ),
)

PTX_SPACE = rowwise.ptx_space(reload=True)


WORKLOAD = Workload(
    name="softmax",
    description="Row-wise softmax of a float32 matrix (rows x cols); rows may hold -inf masks.",
    args=(Arg("x", "in", ("rows", "cols")), Arg("y", "out", ("rows", "cols")), Arg("rows", "dim"),
          Arg("cols", "dim")),
    independent=("rows",),
    shapes=rowwise.SHAPES,
    distributions=DISTRIBUTIONS,
    tolerance=Tolerance(atol=1e-5, rtol=1e-4),
    make_inputs=make_inputs,
    reference=reference,
    flops=lambda s: 5.0 * s["rows"] * s["cols"],
    bytes_moved=lambda s: 8.0 * s["rows"] * s["cols"],
    out_shapes=lambda s: {"y": (s["rows"], s["cols"])},
    templates={
        "cpu": Template("cpu", {"two_pass": "cpu_two_pass.c", "online": "cpu_online.c",
                                "staged": "cpu_staged.c"}, SPACE,
                        variant_param="ALGO", folder=HERE),
        "cuda": Template("cuda", {"rowwise": "cuda_rowwise.cu", "warp": "cuda_warp.cu"}, CUDA_SPACE,
                         variant_param="ALGO", folder=HERE, launch=rowwise.cuda_launch),
        "ptx": Template("ptx", {"warp": "ptx_softmax.ptx", "block": "ptx_softmax.ptx"}, PTX_SPACE,
                        variant_param="ALGO", folder=HERE, launch=rowwise.cuda_launch),
    },
    baselines={
        "cpu": (
            Baseline("numpy", "kernels.workloads.softmax.baselines:numpy_softmax",
                     description="NumPy: max, exp, sum, divide with out= buffers"),
            Baseline("torch", "kernels.workloads.softmax.baselines:torch_softmax", strong=True,
                     requires="torch", description="torch.softmax(out=) into a preallocated tensor"),
            Baseline("torch_compile", "kernels.workloads.softmax.baselines:torch_compiled_softmax",
                     strong=True, requires="torch", default=False,
                     description="torch.compile (Inductor C++/OpenMP)"),
        ),
        "cuda": (
            Baseline("cupy", "kernels.workloads.softmax.baselines_cuda:cupy_softmax", strong=True,
                     requires="cupy", description="CuPy: max, exp, sum, divide with out= buffers"),
            Baseline("torch_cuda", "kernels.workloads.softmax.baselines_cuda:torch_cuda_softmax", strong=True,
                     requires="torch", description="torch.softmax(out=) on the GPU"),
        ),
    },
)
