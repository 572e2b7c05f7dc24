"""The streaming copy timed beside a candidate measures memory, even where the kernel writes
far less than it reads (a reduction, a decode step): the copy is sized by the input, not by
the small output, so a kernel's share of it is a share of memory bandwidth."""
from kernels.graph.ir import Graph, Node, Tensor
from kernels.graph.workload import in_memory
from kernels.harness.evaluator import EvalSettings, Evaluator
from kernels.harness.phases import PROBE_MIN_WORDS


def test_a_reduction_s_share_of_the_copy_is_a_share_of_memory_bandwidth(tmp_path):
    rows, cols = 1024, 8192                       # 32 MiB in, 4 KiB out
    g = Graph((Tensor("x", (rows, cols), "input"),), (),
              (Node("s", "sum", ("x",), (rows, 1), {"dims": [1]}),), ("s",))
    g.validate()
    wl = in_memory("row_sums", g, {}, tmp_path, distributions=("model",))
    src, params = wl.template("cpu").seeds()[0]
    out = Evaluator(EvalSettings(seeds=1, baselines=())).evaluate(src, params, wl, "cpu")
    assert out.status == "ok", out.reason
    probe = out.stage("benchmark").details["copy_probe"]
    assert probe["bytes"] == 2 * min(rows * cols, PROBE_MIN_WORDS) * 4
    assert probe["gbs"] > 2.0, probe               # a copy of memory, not of 4 KiB and a thread wake-up
    roof = out.stage("sanity").details
    # reading runs faster than copying (no writes), but not several times faster
    assert 5 < roof["pct_of_session_copy"] < 400, roof
