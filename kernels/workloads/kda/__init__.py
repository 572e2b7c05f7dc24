"""kda: Kimi Delta Attention forward (the gated delta rule with per-channel decay), float32.

For every batch b and head h a state S (K x V) starts at zero; for t = 0 .. T-1:

    S   = diag(exp(g_t)) S
    S   = S + beta_t k_t (v_t - S^T k_t)^T
    o_t = scale * S^T q_t

Layouts: q, k, g [B, T, H, K]; v, o [B, T, H, V]; beta [B, T, H]; all contiguous float32.

CPU variants: ``recurrent`` (plain four passes per step, the seed), ``fused`` (one
register-blocked pass over an L1-resident V slice per step; optional scaled state), and
``chunked`` (the WY/UT chunked form with register-blocked GEMMs). On the 2-core AVX2 (Zen 3,
no AVX-512) development host at 1x1024x4x64x64, fused with THREADS=2 VEC=8 BV=4 PF=8 runs
in ~1.2-2 ms; chunked is correct but ~2x slower than fused there (it does at least as many
multiply-adds: three K x V products per step plus the intra-chunk pairs and solves).
The tolerance (relative RMSE 1e-4) is ~300x the float32 error of every variant (~4e-7 on
all shapes and distributions) and well below what a misplaced decay or a dropped beta gives.
"""
import math
from pathlib import Path

import numpy as np

from kernels.spec import (Arg, Baseline, Constraint, DesignSpace, Param, Shape, ShapeSets,
                          Template, Tolerance, Workload, rng_for)
from kernels.workloads.kda.reference import reference  # noqa: E402

HERE = Path(__file__).parent
DISTRIBUTIONS = ("normal", "slow_decay", "fast_decay", "large", "tiny", "beta_one")


def _log_sigmoid(x):
    return -np.logaddexp(0.0, -x)


def _sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def _unit(x):
    """L2-normalise over the last axis (K), as KDA does to q and k before the recurrence."""
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-6)


def make_inputs(shape: Shape, distribution: str, seed: int) -> dict:
    B, T, H, K, V = (shape[n] for n in ("B", "T", "H", "K", "V"))
    rng = rng_for(seed, shape, distribution)
    q = _unit(rng.standard_normal((B, T, H, K)))
    k = _unit(rng.standard_normal((B, T, H, K)))
    v = rng.standard_normal((B, T, H, V))
    gate = rng.standard_normal((B, T, H, K))
    b = rng.standard_normal((B, T, H))
    if distribution == "normal":          # decay per step exp(g) = sigmoid(N(0, 1)): ~0.5
        g, beta = _log_sigmoid(gate), _sigmoid(b)
    elif distribution == "slow_decay":    # exp(g) ~ 0.999: memory spans the whole sequence
        g, beta = _log_sigmoid(gate + 7.0), _sigmoid(b)
    elif distribution == "fast_decay":    # exp(g) ~ e^-5 (down to ~e^-9): the state forgets at once
        g, beta = _log_sigmoid(gate - 5.0), _sigmoid(b)
    elif distribution == "large":         # values x100
        g, beta = _log_sigmoid(gate), _sigmoid(b)
        v = v * 100.0
    elif distribution == "tiny":          # values x1e-4
        g, beta = _log_sigmoid(gate), _sigmoid(b)
        v = v * 1e-4
    elif distribution == "beta_one":      # beta exactly 1.0f at 90% of steps, long memory:
        # full replacement each step (sigmoid(b + 12) alone rounds to 0.99999386f, never 1.0f)
        g = _log_sigmoid(gate + 5.0)
        beta = np.where(rng.random(b.shape) < 0.9, 1.0, _sigmoid(b + 12.0))
    else:
        raise ValueError(f"kda has no distribution {distribution!r}")
    f32 = lambda a: np.ascontiguousarray(a, dtype=np.float32)  # noqa: E731
    return {"q": f32(q), "k": f32(k), "v": f32(v), "g": f32(g), "beta": f32(beta),
            "scale": float(K) ** -0.5}


def _flops(s) -> float:
    # Three K x V multiply-adds per step and head (S^T k, the rank-1 update, S^T q); the
    # decay folds into them (a scaled state or the chunked form), so it is not counted.
    B, T, H, K, V = (s[n] for n in ("B", "T", "H", "K", "V"))
    return float(B * T * H) * (6.0 * K * V + 4.0 * K + 4.0 * V)


def _bytes(s) -> float:
    B, T, H, K, V = (s[n] for n in ("B", "T", "H", "K", "V"))
    return 4.0 * B * T * H * (3 * K + 2 * V + 1)


# --------------------------------------------------------------------------- CPU design space

CPU_SPACE = DesignSpace(
    params=(
        Param("ALGO", "variant", choices=("recurrent", "fused", "chunked"),
              help="recurrent: plain 4-pass loop per (b,h); fused: one register-blocked pass over "
                   "the state per step; chunked: WY/UT chunked form (register-blocked GEMMs)"),
        Param("THREADS", "choice", choices=(1, 2, 4, 8), help="OpenMP threads over (b, h[, V group])"),
        Param("VEC", "choice", choices=(1, 8, 16),
              help="fused/chunked: scalar, AVX2 (8) or AVX-512 (16; falls back to 8 without AVX-512F)"),
        Param("BV", "choice", choices=(1, 2, 4, 8),
              help="fused: vectors of V columns per block (a block's accumulators live in registers)"),
        Param("SCALED", "bool",
              help="fused: keep S = diag(c) S~ so the decay costs K scalars per step, not K*V multiplies"),
        Param("VGROUPS", "choice", choices=(1, 2, 4),
              help="fused: split each head's V blocks into this many tasks (parallelism vs shared "
                   "per-step K-side work)"),
        Param("PF", "choice", choices=(0, 4, 8, 16),
              help="fused: software-prefetch input rows this many steps ahead (0: off)"),
        Param("CHUNK", "choice", choices=(16, 32, 64), help="chunked: time steps per chunk"),
    ),
    constraints=(
        Constraint("ALGO != 'recurrent' or VEC == 1", "recurrent is the plain scalar loop: VEC must be 1"),
        Constraint("ALGO == 'fused' or (BV == 1 and SCALED == 0 and VGROUPS == 1 and PF == 0)",
                   "BV, SCALED, VGROUPS and PF only apply to fused (keep their defaults)"),
        Constraint("ALGO == 'chunked' or CHUNK == 16", "CHUNK only applies to chunked (keep 16)"),
    ),
)


# --------------------------------------------------------------------------- CUDA design space

# cuda_chunked.cu's shared memory (bytes), as its pointer arithmetic lays it out: KP = K padded
# to 16, rows of the CHUNK x K arrays padded by 4 words, NB = CHUNK / 8 secondary blocks.
CHUNKED_SMEM_EXPR = ("4 * (3 * CHUNK * (((K + 15) // 16) * 16 + 4) + (CHUNK // 8) * (CHUNK // 8 + 1) // 2 "
                     "* ((K + 15) // 16) * 16 + 2 * (CHUNK // 8) * ((K + 15) // 16) * 16 + ((K + 15) // 16) * 16 "
                     "+ 2 * CHUNK * CHUNK + ((K + 15) // 16) * 16 * BLOCK_V + 2 * CHUNK * BLOCK_V + CHUNK)")


def cuda_chunked_smem(shape: Shape, params) -> int:
    c, bv = int(params.get("CHUNK", 64)), int(params["BLOCK_V"])
    kp = -(-shape["K"] // 16) * 16
    nb = c // 8
    return 4 * (3 * c * (kp + 4) + nb * (nb + 1) // 2 * kp + 2 * nb * kp + kp + 2 * c * c + kp * bv + 2 * c * bv + c)


CUDA_SPACE = DesignSpace(
    params=(
        Param("ALGO", "variant", choices=("reg", "smem", "chunked"),
              help="reg: state slice in registers, rows split over RG adjacent lanes, shuffle "
                   "reductions, no barriers (K <= MAXK); smem: state slice in shared memory, any K; "
                   "chunked: the WY/UT chunked form, chunk products on tensor cores (WMMA TF32)"),
        Param("BLOCK_V", "choice", choices=(8, 16, 32, 64), default=32, help="V columns per block"),
        Param("RG", "choice", choices=(1, 2, 4, 8, 16, 32), default=8,
              help="threads sharing one column (its K rows split between them)"),
        Param("MAXK", "choice", choices=(32, 64, 128, 256), default=128,
              help="reg: largest K a block handles (MAXK / RG state registers per thread)"),
        Param("CHUNK", "choice", choices=(64, 32, 16), help="chunked: time steps per chunk"),
        Param("THREADS", "choice", choices=(128, 256), help="chunked: threads per block"),
        Param("PREC", "choice", choices=(3, 1, 0),
              help="chunked: 3 3xTF32 tensor cores (fp32 accuracy), 1 one TF32 product (~5e-4 relative "
                   "RMSE: a goal must allow 1e-3), 0 fp32 on the CUDA cores"),
    ),
    constraints=(
        Constraint("BLOCK_V * RG >= 32 and BLOCK_V * RG <= 1024", "a block is 32..1024 threads"),
        Constraint("ALGO != 'reg' or K <= MAXK", "reg holds MAXK / RG rows per thread: K must fit"),
        Constraint("ALGO != 'reg' or MAXK <= 32 * RG", "reg: at most 32 state rows per thread"),
        Constraint("ALGO != 'reg' or MAXK * BLOCK_V <= 8192",
                   "reg: MAXK * BLOCK_V <= 8192 keeps registers per thread x threads within the "
                   "register file (no spills)"),
        Constraint("ALGO == 'reg' or MAXK == 128", "MAXK only applies to reg (keep 128)"),
        Constraint("ALGO == 'chunked' or (CHUNK == 64 and THREADS == 128 and PREC == 3)",
                   "CHUNK, THREADS and PREC only apply to chunked (keep 64, 128, 3)"),
        Constraint("ALGO != 'chunked' or (BLOCK_V >= 16 and RG == 8)",
                   "chunked: value blocks of 16, 32 or 64 columns (the 16-wide tiles); RG does not apply (keep 8)"),
        Constraint("ALGO != 'chunked' or PREC != 3 or THREADS == 128 or BLOCK_V >= 32",
                   "chunked: 256 threads on 16 value columns spill with the 3xTF32 fragments (ptxas, sm_90)"),
        Constraint("ALGO != 'chunked' or " + CHUNKED_SMEM_EXPR + " <= 232448",
                   "chunked: the chunk's buffers exceed the 227 KiB of shared memory a block may have"),
        Constraint("ALGO != 'smem' or 4 * (K * BLOCK_V + 3 * K + 2 * RG * BLOCK_V) <= 49152",
                   "smem: the state slice must fit the default 48 KiB of dynamic shared memory"),
    ),
)


def cuda_launch(shape: Shape, params) -> tuple:
    """((grid), (block), dynamic shared bytes) for the CUDA variants."""
    bv, rg = int(params["BLOCK_V"]), int(params["RG"])
    grid = (math.ceil(shape["V"] / bv), shape["B"] * shape["H"], 1)
    if params.get("ALGO") == "chunked":
        return grid, (int(params.get("THREADS", 128)), 1, 1), cuda_chunked_smem(shape, params)
    block = (bv * rg, 1, 1)
    shared = 4 * (shape["K"] * bv + 3 * shape["K"] + 2 * rg * bv) if params.get("ALGO") == "smem" else 0
    return grid, block, shared


WORKLOAD = Workload(
    name="kda",
    description="Kimi Delta Attention forward: gated delta rule with per-key-channel decay, "
                "q, k, g [B,T,H,K], v, o [B,T,H,V], beta [B,T,H], float32.",
    args=(Arg("q", "in", ("B", "T", "H", "K")), Arg("k", "in", ("B", "T", "H", "K")),
          Arg("v", "in", ("B", "T", "H", "V")), Arg("g", "in", ("B", "T", "H", "K")),
          Arg("beta", "in", ("B", "T", "H")), Arg("o", "out", ("B", "T", "H", "V")),
          Arg("B", "dim"), Arg("T", "dim"), Arg("H", "dim"), Arg("K", "dim"), Arg("V", "dim"),
          Arg("scale", "f32")),
    shapes=ShapeSets(
        typical=(Shape.of(B=1, T=1024, H=4, K=64, V=64),),
        # T = 1031 (prime, past 1024): a state restarted every 256 or 512 steps is wrong here.
        awkward=(Shape.of(B=2, T=37, H=3, K=33, V=17), Shape.of(B=1, T=129, H=1, K=65, V=31),
                 Shape.of(B=1, T=1031, H=1, K=9, V=7)),
        aligned=(Shape.of(B=1, T=64, H=2, K=64, V=64), Shape.of(B=2, T=256, H=1, K=16, V=32)),
        minimal=(Shape.of(B=1, T=1, H=1, K=1, V=1), Shape.of(B=1, T=3, H=1, K=2, V=5)),
        held_out=(Shape.of(B=2, T=512, H=2, K=64, V=64), Shape.of(B=1, T=300, H=3, K=48, V=80)),
    ),
    distributions=DISTRIBUTIONS,
    tolerance=Tolerance(rel_rmse=1e-4),
    make_inputs=make_inputs,
    reference=reference,
    flops=_flops,
    bytes_moved=_bytes,
    out_shapes=lambda s: {"o": (s["B"], s["T"], s["H"], s["V"])},
    templates={
        "cpu": Template("cpu", {"recurrent": "cpu_recurrent.c", "fused": "cpu_fused.c",
                                "chunked": "cpu_chunked.c"}, CPU_SPACE,
                        variant_param="ALGO", folder=HERE),
        "cuda": Template("cuda", {"reg": "cuda_reg.cu", "smem": "cuda_smem.cu", "chunked": "cuda_chunked.cu"},
                         CUDA_SPACE,
                         variant_param="ALGO", folder=HERE, launch=cuda_launch),
    },
    baselines={
        "cpu": (
            Baseline("numpy", "kernels.workloads.kda.baselines:numpy_recurrent",
                     description="NumPy recurrence, vectorised over (B, H), float32"),
            Baseline("torch_recurrent", "kernels.workloads.kda.baselines:torch_recurrent", strong=True,
                     requires="torch",
                     description="torch eager recurrence: batched bmm/baddbmm per step into preallocated "
                                 "buffers"),
            Baseline("torch_chunked", "kernels.workloads.kda.baselines:torch_chunked", strong=True,
                     requires="torch",
                     description="torch eager chunked WY/UT form (chunk 64, exact decays via 8-step "
                                 "secondary blocks, batched triangular solve, 5 bmm per chunk)"),
            Baseline("torch_compile", "kernels.workloads.kda.baselines:torch_compiled_chunked",
                     strong=True, requires="torch", default=False,
                     description="torch.compile (Inductor) of the chunked form: the chunk-parallel "
                                 "part and one chunk step as two graphs (~20 s to compile)"),
        ),
        "cuda": (
            Baseline("fla_chunk_kda", "kernels.workloads.kda.baselines_cuda:fla_chunk_kda", strong=True,
                     requires="fla", description="flash-linear-attention's chunk_kda (Triton), float32 inputs"),
            Baseline("fla_chunk_kda_bf16", "kernels.workloads.kda.baselines_cuda:fla_chunk_kda_bf16", strong=True,
                     requires="fla", default=False,
                     description="flash-linear-attention's chunk_kda on bf16 copies of the inputs"),
        ),
    },
    flop_bound=True,
    independent=("B", "H"),
)
