"""Points of a workload's design spaces that the contract tests (test_contract.py) walk
beside its seeds. A workload without an entry (a new or an imported one) still gets every
check the seeds and the spaces' corners allow; an entry adds what was measured on it:

- ``best``: the fastest CPU point measured on the 2-core Zen 3 (AVX2, no AVX-512)
  development host; correct on ``held_out`` too, and timed against the baselines with
  correctness on ``timed_shapes``;
- ``others``: CPU points that walk the other code paths (AVX-512 or its AVX2 fallback with
  masked tails, scalar with several double accumulators, oversubscribed threads, big chunks,
  non-temporal peels);
- ``cuda``: CUDA points compiled for sm_90 without spills, beyond the seeds and the corners;
- ``seed_knobs``: per variant, knobs its seed runs with because the space's defaults are not
  a legal point of that variant (``Template.seeds()`` takes the defaults for every variant).
"""
from __future__ import annotations

from dataclasses import dataclass

from kernels.spec import Shape


@dataclass(frozen=True)
class Points:
    best: dict | None = None
    others: tuple[dict, ...] = ()
    held_out: tuple[Shape, ...] = ()
    timed_shapes: tuple[Shape, ...] = ()
    cuda: tuple[dict, ...] = ()
    seed_knobs: dict | None = None


ROWS_HELD_OUT = (Shape.of(rows=333, cols=3001),)
ROWS_TIMED = (Shape.of(rows=5, cols=4099),)

POINTS = {
    "softmax": Points(seed_knobs={"staged": {"VEC": 16}}),      # staged is vector-only
    "rmsnorm": Points(
        best={"ALGO": "fused", "THREADS": 2, "VEC": 8, "UNROLL": 4, "CHUNK": 16, "NT": 1},
        others=({"ALGO": "two_pass", "THREADS": 4, "VEC": 16, "UNROLL": 2, "CHUNK": 4, "NT": 1},
                {"ALGO": "fused", "THREADS": 8, "VEC": 1, "UNROLL": 4, "CHUNK": 64, "NT": 0},
                {"ALGO": "fused", "THREADS": 2, "VEC": 16, "UNROLL": 1, "CHUNK": 4, "NT": 0}),
        held_out=ROWS_HELD_OUT, timed_shapes=ROWS_TIMED),
    "layernorm": Points(
        best={"ALGO": "two_pass", "THREADS": 2, "VEC": 8, "UNROLL": 4, "CHUNK": 16, "NT": 1},
        others=({"ALGO": "welford", "THREADS": 4, "VEC": 16, "UNROLL": 2, "CHUNK": 4, "NT": 1},
                {"ALGO": "welford", "THREADS": 8, "VEC": 1, "UNROLL": 4, "CHUNK": 64, "NT": 0},
                {"ALGO": "two_pass", "THREADS": 2, "VEC": 8, "UNROLL": 1, "CHUNK": 1, "NT": 0}),
        held_out=ROWS_HELD_OUT, timed_shapes=ROWS_TIMED),
    "matmul": Points(cuda=(
        {"ALGO": "tiled", "TILE": 32},
        {"ALGO": "regblock", "BM": 128, "BN": 128, "BK": 8, "TM": 8, "TN": 8},
        {"ALGO": "regblock", "BM": 32, "BN": 32, "BK": 32, "TM": 4, "TN": 8},
        {"ALGO": "regblock", "BM": 32, "BN": 128, "BK": 8, "TM": 1, "TN": 4},
    )),
    "kda": Points(cuda=(
        {"ALGO": "reg", "BLOCK_V": 64, "RG": 4, "MAXK": 128},     # 32 rows per thread, 256 threads
        {"ALGO": "reg", "BLOCK_V": 32, "RG": 32, "MAXK": 256},    # 1024 threads
        {"ALGO": "smem", "BLOCK_V": 8, "RG": 4, "MAXK": 128},
    )),
}
