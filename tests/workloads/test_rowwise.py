"""What the row-wise normalisations share (kernels/workloads/rowwise.py and the same knobs in
each CPU space): their counts, a plain seed by default, constraints that say why they refuse,
and the CUDA launch geometry of a block per row (rowwise) or a warp per row (warp)."""
import pytest

from kernels import workloads
from kernels.spec import Shape

NORMS = {"rmsnorm": "two_pass", "layernorm": "two_pass"}   # workload → its plain seed's ALGO


S = Shape.of(rows=4096, cols=4096)
N = 4096 * 4096


@pytest.mark.parametrize("name, least_flops, bytes_moved, signature", [
    ("layernorm", 8 * N - 1, 4.0 * (2 * N + 2 * 4096),
     "void kernel(const float *x, const float *gamma, const float *beta, float *y, int64_t rows, int64_t cols, "
     "float eps)"),
    ("rmsnorm", 4 * N - 1, 4.0 * (2 * N + 4096),
     "void kernel(const float *x, const float *w, float *y, int64_t rows, int64_t cols, float eps)"),
])
def test_counts_and_output_shapes(name, least_flops, bytes_moved, signature):
    wl = workloads.get(name)
    assert wl.out_shapes(S) == {"y": (4096, 4096)}
    assert wl.flops(S) > least_flops and wl.bytes_moved(S) == bytes_moved
    assert wl.signature("cpu") == signature


@pytest.mark.parametrize("name", list(NORMS))
def test_the_defaults_are_the_plain_seed(name):
    d = workloads.get(name).template("cpu").space.default()
    assert d["THREADS"] == 1 and d["VEC"] == 1 and d["NT"] == 0 and d["ALGO"] == NORMS[name]


@pytest.mark.parametrize("name", list(NORMS))
def test_constraints_say_why(name):
    wl = workloads.get(name)
    space = wl.template("cpu").space
    bad = {**space.default(), "NT": 1}
    assert any("non-temporal" in p for p in space.violations(bad, list(wl.shapes.typical)))
    crowded = {**space.default(), "THREADS": 8, "CHUNK": 64}
    assert any("threads would get no work" in p for p in space.violations(crowded, [Shape.of(rows=67, cols=1013)]))


@pytest.mark.parametrize("name, warp_block, warp_grid", [("layernorm", 128, 84), ("rmsnorm", 256, 42)])
def test_cuda_launch_geometry(name, warp_block, warp_grid):
    launch = workloads.get(name).template("cuda").launch
    s = Shape.of(rows=333, cols=3001)
    assert launch(s, {"ALGO": "rowwise", "BLOCK": 512, "VEC": 4}) == ((333, 1, 1), (512, 1, 1), 0)
    assert launch(s, {"ALGO": "warp", "BLOCK": warp_block, "VEC": 1}) == ((warp_grid, 1, 1), (warp_block, 1, 1), 0)
