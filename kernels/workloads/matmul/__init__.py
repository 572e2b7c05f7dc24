"""matmul: C = A·B for float32 row-major matrices (A m×k, B k×n, C m×n)."""
from pathlib import Path

import numpy as np

from kernels.spec import (Arg, Baseline, Constraint, DesignSpace, Param, Shape, ShapeSets,
                          Template, Tolerance, Workload, rng_for)
from kernels.workloads.matmul.reference import reference  # noqa: E402

HERE = Path(__file__).parent
DISTRIBUTIONS = ("normal", "large", "tiny", "mixed", "integers")


def make_inputs(shape: Shape, distribution: str, seed: int) -> dict:
    m, n, k = shape["m"], shape["n"], shape["k"]
    rng = rng_for(seed, shape, distribution)
    if distribution == "normal":
        a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    elif distribution == "large":  # |C| up to ~1e35: near the float32 ceiling, never over it
        a, b = rng.standard_normal((m, k)) * 3e17, rng.standard_normal((k, n)) * 1e15
    elif distribution == "tiny":  # products ~1e-31: far below 1, still normal floats
        a, b = rng.standard_normal((m, k)) * 1e-15, rng.standard_normal((k, n)) * 3e-16
    elif distribution == "mixed":
        # Mixed signs and magnitudes over four decades, plus cancellation: every row of A
        # carries a common offset and every column of B sums to ~0, so the offset's large
        # partial sums cancel and C is the small remainder.
        a = rng.choice([-1.0, 1.0], (m, k)) * 10.0 ** rng.uniform(-2, 2, (m, k)) * 0.05
        a += rng.uniform(-4, 4, (m, 1))
        b = rng.standard_normal((k, n)) * 10.0 ** rng.uniform(-1, 1, (1, n))
        b -= b.mean(axis=0, keepdims=True)
    elif distribution == "integers":  # small integers: every partial sum is exact in float32
        a, b = rng.integers(-8, 9, (m, k)), rng.integers(-8, 9, (k, n))
    else:
        raise ValueError(f"matmul has no distribution {distribution!r}")
    return {"a": np.ascontiguousarray(a, dtype=np.float32), "b": np.ascontiguousarray(b, dtype=np.float32)}


# Tolerance. An elementwise atol + rtol·|ref| bound does not fit a dot product: the error
# of a correct float32 kernel scales with the magnitudes of the partial sums (≈ eps·√k·
# ‖a_i‖‖b_j‖ for random signs, up to eps·k·Σ|a||b| in the worst case), not with |C_ij|,
# which cancellation can make arbitrarily small; and no single atol serves the "large"
# (|C| ~ 1e34) and "tiny" (|C| ~ 1e-29) inputs. So the bound is a relative RMSE over the
# whole output, which is scale-free. Measured here (seed kernels, OpenBLAS, summation in
# any order, with or without FMA): ≤ 1.3e-6 at k = 2048 (the sequential i-k-j loop on the
# "mixed" cancellation inputs is the worst), ~3e-7 for blocked/FMA kernels; it grows like
# √k. Wrong kernels land far above 1e-5: rounding the inputs to fp16 gives ~3e-4, TF32
# ~8e-4, bf16 ~6e-3, dropping one k term (e.g. a lost last partial k-tile) 3e-2 (k = 1024)
# to 0.3, and a non-finite value anywhere fails outright. The price of a global norm: a
# single wrong element of a 1024×1024 output is caught only if it is off by more than ~1%
# of the RMS of C (a wrong edge tile or row is caught easily).
TOLERANCE = Tolerance(rel_rmse=1e-5)

SPACE = DesignSpace(
    params=(
        Param("ALGO", "variant", choices=("naive", "blocked"), help="algorithm template"),
        Param("THREADS", "choice", choices=(1, 2, 4, 8), help="OpenMP threads"),
        Param("MR", "choice", choices=(2, 4, 6, 8, 12, 14), default=6,
              help="blocked: micro-tile rows (broadcasts of A per k step)"),
        Param("NV", "choice", choices=(1, 2, 3, 4), default=2,
              help="blocked: micro-tile width in vectors; NR = NV*16 with AVX-512, NV*8 otherwise"),
        Param("MC", "choice", choices=(24, 48, 72, 84, 96, 120, 144, 168, 192, 240, 288, 336, 384, 480),
              default=48, help="blocked: rows of A per packed block (and per PAR=2 work item)"),
        Param("KC", "choice", choices=(64, 128, 192, 256, 320, 384, 512, 768), default=384,
              help="blocked: depth of a packed block (k slice)"),
        Param("NC", "choice", choices=(256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192),
              default=1536, help="blocked: columns of B per packed block (L2/L3)"),
        Param("UNROLL", "choice", choices=(1, 2, 4, 8), default=1, help="blocked: micro-kernel k unroll"),
        Param("PACK_A", "bool", default=1, help="blocked: pack A into MR panels (0: broadcast from A)"),
        Param("PAR", "choice", choices=(0, 1, 2), default=2,
              help="blocked: threads split 0 rows of C evenly, 1 NR panels, 2 MC-row blocks dynamically"),
        Param("ORDER", "choice", choices=(0, 1), default=1,
              help="blocked: 0 jr outer / ir inner (B micro-panel in L1), 1 ir outer / jr inner (A in L1)"),
        Param("PREFETCH", "choice", choices=(0, 1, 2), help="blocked: 0 none, 1 C tile, 2 C tile + A stream"),
    ),
    constraints=(
        Constraint("MC % MR == 0", "MC must be a multiple of MR (whole micro-panels per block)"),
        Constraint("NC % (NV * 16) == 0", "NC must be a multiple of NR (NV*16 covers both vector widths)"),
        Constraint("MR * NV <= 28",
                   "MR x NV accumulators do not fit the 32 vector registers of AVX-512 (AVX2 has 16)"),
        Constraint("THREADS == 1 or m * n * k >= 4096 * THREADS",
                   "fewer than 4096 multiply-adds per thread: forking threads costs more than the work"),
    ),
)

CUDA_SPACE = DesignSpace(
    params=(
        Param("ALGO", "variant", choices=("tiled", "regblock"), help="algorithm template"),
        Param("TILE", "choice", choices=(16, 32), help="tiled: TILE x TILE threads, one C element each"),
        Param("BM", "choice", choices=(32, 64, 128), default=64, help="regblock: rows of C per block"),
        Param("BN", "choice", choices=(32, 64, 128), default=64, help="regblock: columns of C per block"),
        Param("BK", "choice", choices=(8, 16, 32), default=16, help="regblock: k step staged in shared memory"),
        Param("TM", "choice", choices=(1, 2, 4, 8), default=4, help="regblock: rows of C per thread"),
        Param("TN", "choice", choices=(1, 2, 4, 8), default=4, help="regblock: columns of C per thread"),
        Param("MIN_BLOCKS", "choice", choices=(1, 2), help="regblock: __launch_bounds__ min blocks per SM"),
    ),
    constraints=(
        Constraint("BM % TM == 0 and BN % TN == 0", "the block tile must split evenly into thread tiles"),
        Constraint("32 <= (BM // TM) * (BN // TN) <= 1024", "a block must have 32..1024 threads"),
        Constraint("(BM // TM) * (BN // TN) % BK == 0", "the thread count must be a multiple of BK (staging)"),
        Constraint("BK * (BM + BN) * 4 <= 48 * 1024", "static shared memory is limited to 48 KiB"),
        Constraint("TM * TN <= 64", "more than 64 accumulators per thread spill registers"),
        # Checked with ptxas (sm_90, CUDA 13.0) over the whole space: every legal point
        # compiles without spills; the excluded ones are where it spilled or came close.
        Constraint("TM * TN + (BM + BN) * BK // ((BM // TM) * (BN // TN)) <= 128",
                   "accumulators plus staged tile elements per thread exceed ~128 registers (spills)"),
        Constraint("MIN_BLOCKS == 1 or (BM // TM) * (BN // TN) <= 512",
                   "two blocks of 1024 threads per SM leave 32 registers per thread (spills)"),
    ),
)


PTX_SPACE = DesignSpace(
    params=(
        Param("ALGO", "variant", choices=("mma",), help="mma: mma.sync m16n8k8 TF32 tensor-core tiles"),
        Param("BM", "choice", choices=(64, 128), default=128, help="rows of C per block"),
        Param("BN", "choice", choices=(64, 128), default=128, help="columns of C per block"),
        Param("BK", "choice", choices=(16, 32), default=32, help="k step staged in shared memory"),
        Param("WM", "choice", choices=(32, 64), default=64, help="rows of C per warp (WM / 16 mma tiles)"),
        Param("WN", "choice", choices=(32, 64), default=32, help="columns of C per warp (WN / 8 mma tiles)"),
        Param("PREC", "choice", choices=(3, 1),
              help="3: 3xTF32 (hi/lo split, fp32 accuracy); 1: plain TF32 (~1e-3: a goal's tolerance must allow it)"),
        Param("STAGES", "choice", choices=(2, 1), help="2: the next tile's loads in flight during the mma work"),
    ),
    constraints=(
        Constraint("BM % WM == 0 and BN % WN == 0", "the block tile must split evenly into warp tiles"),
        Constraint("4 <= (BM // WM) * (BN // WN) <= 8",
                   "a block is 4..8 warps (fewer: too many staged elements per thread; more: .maxntid caps "
                   "the registers below the accumulators' needs)"),
        Constraint("BK * (BM + BN + 16) * 4 <= 48 * 1024", "static shared memory is limited to 48 KiB"),
        # Checked with ptxas (sm_90a, CUDA 13.0) over the whole space: every legal point
        # assembles without spills; the excluded ones are where it spilled or came close.
        Constraint("(WM // 16) * (WN // 8) <= 16", "a 64x64 warp tile (128 accumulators) spills with its fragments"),
        Constraint("STAGES == 1 or BK * (BM + BN) // (32 * (BM // WM) * (BN // WN)) <= 32",
                   "the prefetched tile takes more than 32 registers per thread (spills)"),
    ),
)


def ptx_launch(shape: Shape, params) -> tuple:
    """(grid, block, dynamic shared bytes) for the PTX mma template."""
    bm, bn = int(params.get("BM", 128)), int(params.get("BN", 128))
    threads = 32 * (bm // int(params.get("WM", 64))) * (bn // int(params.get("WN", 32)))
    return ((-(-shape["n"] // bn), -(-shape["m"] // bm), 1), (threads, 1, 1), 0)


def cuda_launch(shape: Shape, params) -> tuple:
    """(grid, block, dynamic shared bytes) for the CUDA templates."""
    m, n = shape["m"], shape["n"]
    if params.get("ALGO", "tiled") == "tiled":
        t = int(params.get("TILE", 16))
        return ((-(-n // t), -(-m // t), 1), (t, t, 1), 0)
    bm, bn = int(params.get("BM", 64)), int(params.get("BN", 64))
    tm, tn = int(params.get("TM", 4)), int(params.get("TN", 4))
    return ((-(-n // bn), -(-m // bm), 1), (bn // tn, bm // tm, 1), 0)


WORKLOAD = Workload(
    name="matmul",
    description="C = A·B for float32 row-major matrices (A m×k, B k×n, C m×n).",
    args=(Arg("a", "in", ("m", "k")), Arg("b", "in", ("k", "n")), Arg("c", "out", ("m", "n")),
          Arg("m", "dim"), Arg("n", "dim"), Arg("k", "dim")),
    independent=("m", "n"),
    shapes=ShapeSets(
        typical=(Shape.of(m=1024, n=1024, k=1024), Shape.of(m=2048, n=2048, k=2048)),
        # k = 2053 (prime, past 2048): a kernel that drops part of a long k is wrong here.
        awkward=(Shape.of(m=67, n=131, k=257), Shape.of(m=5, n=1000, k=33), Shape.of(m=7, n=37, k=2053)),
        aligned=(Shape.of(m=64, n=128, k=256), Shape.of(m=16, n=64, k=2048)),
        minimal=(Shape.of(m=1, n=1, k=1), Shape.of(m=1, n=17, k=3)),
        held_out=(Shape.of(m=512, n=768, k=384), Shape.of(m=333, n=301, k=129)),
    ),
    distributions=DISTRIBUTIONS,
    tolerance=TOLERANCE,
    make_inputs=make_inputs,
    reference=reference,
    flops=lambda s: 2.0 * s["m"] * s["n"] * s["k"],
    bytes_moved=lambda s: 4.0 * (s["m"] * s["k"] + s["k"] * s["n"] + s["m"] * s["n"]),
    out_shapes=lambda s: {"c": (s["m"], s["n"])},
    flop_bound=True,
    templates={
        "cpu": Template("cpu", {"naive": "cpu_naive.c", "blocked": "cpu_blocked.c"}, SPACE,
                        variant_param="ALGO", folder=HERE),
        "cuda": Template("cuda", {"tiled": "cuda_tiled.cu", "regblock": "cuda_regblock.cu"}, CUDA_SPACE,
                         variant_param="ALGO", folder=HERE, launch=cuda_launch),
        "ptx": Template("ptx", {"mma": "ptx_mma.ptx"}, PTX_SPACE, variant_param="ALGO", folder=HERE,
                        launch=ptx_launch),
    },
    baselines={
        "cpu": (
            Baseline("numpy", "kernels.workloads.matmul.baselines:numpy_matmul", strong=True,
                     description="np.matmul(out=) (OpenBLAS sgemm)"),
            Baseline("torch", "kernels.workloads.matmul.baselines:torch_matmul", strong=True,
                     requires="torch", description="torch.matmul(out=) into a preallocated tensor"),
            Baseline("torch_compile", "kernels.workloads.matmul.baselines:torch_compiled_matmul",
                     strong=True, requires="torch", default=False,
                     description="torch.compile of torch.matmul (Inductor)"),
        ),
        "cuda": (
            Baseline("cupy", "kernels.workloads.matmul.baselines:cupy_matmul", strong=True,
                     requires="cupy", description="cp.matmul(out=) (cuBLAS sgemm)"),
            Baseline("torch_cuda", "kernels.workloads.matmul.baselines:torch_cuda_matmul", strong=True,
                     requires="torch", description="torch.matmul(out=) on the GPU, TF32 off"),
            Baseline("torch_cuda_tf32", "kernels.workloads.matmul.baselines:torch_cuda_matmul_tf32", strong=True,
                     requires="torch", default=False,
                     description="torch.matmul on the GPU with TF32 on (cuBLAS TF32 tensor cores)"),
        ),
    },
)
