"""The target table: a memory-bound ratio target carries its roofline bound, so a target
beyond what this host's memory can deliver says so with the run's own measurements."""
from bench.targets import assess


def _result(numpy_ratio, pct_of_copy):
    kernel = {"status": "ok",
              "candidate": {"roofline": {"pct_of_copy_bandwidth": pct_of_copy, "bound": "memory"}},
              "by_kind": {"numpy": {"name": "numpy", "ratio_median": numpy_ratio, "ratio_min": numpy_ratio,
                                    "ratio_max": numpy_ratio}}}
    return {"kernels": {"rmsnorm": {"4096x4096": kernel}}, "roofline": {"copy_gbs": 70.0}, "search": {}}


def _numpy_row(result):
    return next(r for r in assess(result) if "NumPy" in r["text"])


def test_a_ratio_target_beyond_the_bandwidth_bound_is_not_met_and_says_why():
    row = _numpy_row(_result(3.5, 61.5))   # at 61.5% of copy bandwidth: the bound is 3.5 / 0.615
    assert row["met"] is False
    assert abs(row["bound"] - 3.5 / 0.615) < 1e-9
    assert "8x is beyond this host's memory system" in row["note"]


def test_a_reachable_target_shows_its_bound_without_excusing_the_miss():
    row = _numpy_row(_result(6.0, 60.0))   # bound 10x: 8x is reachable, just not reached
    assert row["met"] is False and row["bound"] == 10.0
    assert "beyond" not in row["note"]
