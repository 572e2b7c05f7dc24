"""The generated source of every imported test problem passes the harness (static checks,
compile, audit, correctness at the problem's awkward shape on every distribution), in its
default configuration and with its fusions split (FUSE_* = 0)."""
import re

import pytest

from tests.ownops.problem_files import problem_names
from kernels import workloads
from kernels.harness.evaluator import EvalSettings, Evaluator


def evaluate(name, **changes):
    wl = workloads.get(name)
    src, params = wl.template("cpu").seeds()[0]
    params.update(changes)
    assert not wl.template("cpu").space.violations(params)
    return Evaluator(EvalSettings(timing=False)).evaluate(src, params, wl, "cpu")


@pytest.mark.parametrize("name", problem_names())
def test_the_generated_kernel_is_correct(name, imported):
    assert imported(name).ok
    out = evaluate(name)
    assert out.status == "ok", out.reason


@pytest.mark.parametrize("name", ["gemm_bias_gelu", "bmm_transposed_scale", "linear3d_relu_residual"])
def test_the_unfused_form_is_correct_too(name, imported):
    assert imported(name).ok
    space = workloads.get(name).template("cpu").space
    bits = [p.name for p in space.params if p.name.startswith("FUSE_")]
    assert bits
    out = evaluate(name, **{b: 0 for b in bits})
    assert out.status == "ok", out.reason


@pytest.mark.parametrize("bpar", [0, 1])
def test_the_blocked_batched_gemm_is_correct_whoever_splits_the_batch(bpar, imported):
    """Small blocks force several k slices and column blocks per product, and a batch the
    threads either share (BPAR 0: one packed B block at a time, double-buffered) or split."""
    assert imported("bmm_transposed_scale").ok
    g = next(k.split("_")[0] for k in workloads.get("bmm_transposed_scale").template("cpu").space.names
             if k.endswith("_BPAR"))
    out = evaluate("bmm_transposed_scale", **{f"{g}_ALGO": 1, f"{g}_BPAR": bpar, f"{g}_THREADS": 2,
                                              f"{g}_KC": 64, f"{g}_NC": 256, f"{g}_MC": 24, f"{g}_MR": 4})
    assert out.status == "ok", out.reason


@pytest.mark.parametrize("nv", [1, 2, 3, 4])
@pytest.mark.parametrize("name", ["gemm_bias_gelu", "linear3d_relu_residual"])
def test_the_packed_gemm_is_correct_against_a_transposed_weight_at_every_panel_width(name, nv, imported):
    """A Linear weight is B transposed: its panels are packed in 8 x 8 transposed tiles (AVX2),
    full panels only, with a ragged depth (the awkward shape's k) and a ragged last panel left
    to the scalar loop; every panel width (NV vectors) and a KC that leaves a short last slice."""
    assert imported(name).ok
    space = workloads.get(name).template("cpu").space
    groups = sorted({k[:-len("_NV")] for k in space.names if k.endswith("_NV")})
    assert groups
    changes = {f"{g}_{k}": v for g in groups
               for k, v in (("ALGO", 1), ("NV", nv), ("MR", 4), ("MC", 24), ("KC", 64), ("NC", 768))}
    out = evaluate(name, **changes)
    assert out.status == "ok", out.reason


DOT_TILES = [(1, 1), (3, 5), (4, 6), (8, 3), (2, 8), (6, 4)]


def dot_groups(name):
    space = workloads.get(name).template("cpu").space
    return sorted(k[:-len("_NR3")] for k in space.names if k.endswith("_NR3"))


@pytest.mark.parametrize("mr,nr", DOT_TILES)
@pytest.mark.parametrize("name", ["linear_deep_silu", "gemm_bias_gelu", "bmm_transposed_scale"])
def test_the_dot_tiles_are_correct_at_every_tile_shape(name, mr, nr, imported):
    """ALGO 3 (rows of A against rows of a transposed weight, unpacked): tiles that do not divide
    the rows or the columns (rows past the edge read row 0 again and are not stored), a depth
    that leaves a tail short of a vector, and k in 128-deep slices summed into the output (389
    is four slices), with the epilogue applied once, after the last."""
    assert imported(name).ok
    groups = dot_groups(name)
    assert groups
    changes = {f"{g}_{k}": v for g in groups for k, v in (("ALGO", 3), ("MR3", mr), ("NR3", nr), ("KC3", 128))}
    out = evaluate(name, **changes)
    assert out.status == "ok", out.reason


def test_the_dot_tiles_are_the_default_for_a_deep_linear_where_they_fit_and_their_tail_is_checked(imported):
    """A Linear with k >= 256 starts in the form the host's probe measured faster
    (kernels/codegen/gemm_form.py); generated for another host, by its registers: dot tiles
    with 32 (AVX-512), packed with 16 (AVX2: the default 4 x 6 tile needs 30). A control: the
    same kernel without its scalar tail (k 389 = 24 vectors + 5) is refused, so the tests
    above exercise it."""
    from kernels.codegen import program
    from kernels.codegen.gemm_form import host_gemm_form
    from kernels.graph import store
    assert imported("linear_deep_silu").ok
    wl = workloads.get("linear_deep_silu")
    src, params = wl.template("cpu").seeds()[0]
    (g,) = dot_groups("linear_deep_silu")
    assert params[f"{g}_ALGO"] == host_gemm_form()      # this host's default
    graph, _ = store.read_shape(store.lookup("linear_deep_silu"), 0)
    for vregs, algo in ((32, 3), (16, 1)):
        space = program.generate(graph, vregs=vregs).space
        assert space.param(f"{g}_ALGO").default == algo, vregs
    for form in (1, 3):
        assert program.generate(graph, gemm_form=form).space.param(f"{g}_ALGO").default == form
    params[f"{g}_ALGO"] = 3
    assert evaluate("linear_deep_silu", **{f"{g}_ALGO": 3}).status == "ok"
    broken = src.replace("s[i][j] += ar[i][q] * wr[j][q];", "(void)q;")
    assert broken != src
    out = Evaluator(EvalSettings(timing=False)).evaluate(broken, params, wl, "cpu")
    assert out.status == "wrong", out.reason


def test_it_refuses_a_wrong_kernel(imported):
    """A control: the judge is not fooled by a kernel that writes zeros."""
    assert imported("softmax_rows").ok
    wl = workloads.get("softmax_rows")
    src, params = wl.template("cpu").seeds()[0]
    broken = re.sub(r"(out0\[[^\]]*\] = )(\w+);", r"\g<1>0.5f * \2;", src)
    assert broken != src
    out = Evaluator(EvalSettings(timing=False)).evaluate(broken, params, wl, "cpu")
    assert out.status == "wrong"


@pytest.mark.parametrize("name,fuse", [("gemm_bias_gelu", 1), ("gemm_bias_gelu", 0), ("matmul_plain", 1),
                                       ("bmm_transposed_scale", 1), ("linear3d_relu_residual", 0),
                                       ("einsum_4d", 1)])
def test_the_matrix_vector_path_is_correct_for_every_layout(name, fuse, imported):
    """ALGO 2 (threads split the columns in JB chunks, B streamed unpacked: a Linear weight as
    dot products, a row-major B as row updates, other strides scalar) at every matmul group,
    with the epilogue fused or split, at the problem's awkward shape: a JB that does not
    divide the columns leaves a ragged last chunk."""
    assert imported(name).ok
    space = workloads.get(name).template("cpu").space
    groups = sorted({k[:-len("_JB")] for k in space.names if k.endswith("_JB")})
    assert groups
    changes = {f"{g}_{k}": v for g in groups for k, v in (("ALGO", 2), ("JB", 16), ("THREADS", 2))}
    changes.update({b: fuse for b in space.names if b.startswith("FUSE_")})
    out = evaluate(name, **changes)
    assert out.status == "ok", out.reason


@pytest.mark.parametrize("gr", [1, 2, 4, 8])
@pytest.mark.parametrize("name", ["gemm_bias_gelu", "bmm_transposed_scale", "linear3d_relu_residual"])
def test_the_matrix_vector_dot_products_are_correct_at_every_rows_per_pass(name, gr, imported):
    """ALGO 2 over a weight read as rows sums GR rows per pass over A's row (the default is the
    host's fastest, kernels/codegen/streaming.py): with JB 16 the chunks of 29, 27 and 41
    columns end in 13, 11 and 9, so every pass size at or below GR and the single rows after it run."""
    from kernels.codegen.streaming import host_rows_per_pass
    assert imported(name).ok
    space = workloads.get(name).template("cpu").space
    groups = sorted(k[:-len("_GR")] for k in space.names if k.endswith("_GR"))
    assert groups, "a Linear weight (B read as rows contiguous in k) has the rows-per-pass knob"
    assert space.param(f"{groups[0]}_GR").default == host_rows_per_pass()
    out = evaluate(name, **{f"{g}_{k}": v for g in groups for k, v in (("ALGO", 2), ("JB", 16), ("GR", gr))})
    assert out.status == "ok", out.reason


@pytest.mark.parametrize("gr,right,wrong", [(2, "ci[j] = s0; ci[j + 1] = s1;\n", "ci[j] = s0; ci[j + 1] = s0;\n"),
                                             (8, "ci[j + 6] = s6;", "ci[j + 6] = s5;")])
def test_a_pass_that_drops_one_of_its_rows_is_caught(gr, right, wrong, imported):
    """A control for the test above: the judge sees a two-row pass that writes its first sum
    twice, and an eight-row pass that writes its sixth sum twice."""
    assert imported("bmm_transposed_scale").ok
    wl = workloads.get("bmm_transposed_scale")
    src, params = wl.template("cpu").seeds()[0]
    broken = src.replace(right, wrong)
    assert broken != src
    groups = sorted(k[:-len("_GR")] for k in wl.template("cpu").space.names if k.endswith("_GR"))
    params.update({f"{g}_{k}": v for g in groups for k, v in (("ALGO", 2), ("JB", 16), ("GR", gr))})
    out = Evaluator(EvalSettings(timing=False)).evaluate(broken, params, wl, "cpu")
    assert out.status == "wrong"


def test_the_default_row_blocks_are_shared_evenly_by_the_threads():
    from kernels.codegen.matmul import balanced_mc
    for m in (64, 128, 129, 200, 256, 512, 1000):
        mc = balanced_mc(m, 2)
        blocks = -(-m // mc)
        # whole micro-panels, and an even share each (past 8 blocks, one more costs a thread < 1/8)
        assert mc % 6 == 0 and (blocks % 2 == 0 or blocks > 8), (m, mc)
        assert 30 <= mc <= 72, (m, mc)                             # about 48 rows a block, as tuned
    assert balanced_mc(128, 1) == 48                               # one thread: the tuned default


@pytest.mark.parametrize("sdot", [0, 1])
@pytest.mark.parametrize("name,bk", [("attention_decode_wide", 32), ("attention_decode_wide", 64),
                                     ("attention_gqa_mask", 32)])
def test_attention_scores_as_row_dot_products_or_from_a_packed_key_block_agree(name, bk, sdot, imported):
    """A decode step's few query rows (SDOT 1: each key row dotted with them) and a block of
    many (SDOT 0: the key block packed transposed), with a last key block cut short (83 and
    29 keys), a mask, and value rows read in place."""
    assert imported(name).ok
    space = workloads.get(name).template("cpu").space
    groups = sorted(k[:-len("_SDOT")] for k in space.names if k.endswith("_SDOT"))
    assert groups, "whole-vector heads with contiguous key rows have the SDOT knob"
    out = evaluate(name, **{f"{g}_{k}": v for g in groups for k, v in (("SDOT", sdot), ("BK", bk))})
    assert out.status == "ok", out.reason
    assert space.param(f"{groups[0]}_SDOT").default == (1 if name == "attention_decode_wide" else 0)


@pytest.mark.parametrize("fuse,sdot", [(1, 1), (1, 0), (0, 1)])
def test_attention_reads_a_concatenated_cache_in_place_or_after_copying_it(fuse, sdot, imported):
    """Keys and values that are a concatenation along the key axis (cached rows, then the
    step's new ones) only the attention reads: FUSE 1 reads each input where it lies, the
    key rows by pointer (SDOT 1) or packed (SDOT 0), the transposed value cache packed;
    FUSE 0 copies them into the concatenation first, in a cat group of its own. A key block
    of 32 straddles the boundary between the 83 cached rows and the new one."""
    assert imported("attention_decode_cache").ok
    wl = workloads.get("attention_decode_cache")
    src, params = wl.template("cpu").seeds()[0]
    space = wl.template("cpu").space
    bits = [p for p in space.params if p.name.startswith("FUSE_")]
    assert len(bits) == 1 and bits[0].default == 1 and "concatenation" in bits[0].help
    # read in place: no copy of the cache in any group (a view it cannot follow is copied first)
    assert {g["family"] for g in wl.groups if g.get("form") in (None, "fused")} == {"attention"}
    groups = sorted(k[:-len("_SDOT")] for k in space.names if k.endswith("_SDOT"))
    out = evaluate("attention_decode_cache", **{bits[0].name: fuse, **{f"{g}_{k}": v for g in groups
                                                                      for k, v in (("SDOT", sdot), ("BK", 32))}})
    assert out.status == "ok", out.reason
