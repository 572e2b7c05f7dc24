"""`python -m bench engine` is registered and its table reads a report (the run itself is a
benchmark, not a test: `python -m bench engine --tiny` is the dry run)."""
from bench import __main__ as bench_main
from bench import engine_bench


def test_the_engine_benchmark_is_registered():
    assert bench_main.BENCHMARKS["engine"][0] == "bench.engine_bench"
    assert set(engine_bench.cases_for(True)) == {"prefill", "decode128", "decode1024"}
    assert engine_bench.cases_for(False)["decode1024"]["length"] == 1024


def test_the_table_shows_each_peer_and_the_speedup_over_the_best():
    t = {"median_ms": 1.0, "iqr_ms": 0.1}
    report = {"cases": [{"name": "prefill 1x16", "status": "ok", "engine": {"median_ms": 0.5},
                         "peers": {"torch": t, "onnxruntime": {"median_ms": 0.8}},
                         "speedup": {"torch": 2.0, "onnxruntime": 1.6}, "speedup_over_best_peer": 1.6}],
              "engine": {"phases": {"prefill": {"groups": 3, "arena": {"bytes": 1024, "bytes_no_reuse": 4096},
                                                "source_bytes": 2048}}}}
    text = engine_bench.table(report)
    assert "onnxruntime ms" in text and "openvino" not in text
    assert "1.60x" in text and "arena 1.0 KiB (without reuse 4.0 KiB)" in text
    assert "probed defaults" not in text
    report["host_defaults"] = {"gemm_form": "dot tiles (ALGO 3)", "gemv_rows_per_pass": 8}
    assert "deep Linears in dot tiles (ALGO 3), 8 weight rows per matrix-vector pass" in engine_bench.table(report)


def test_the_report_records_the_host_defaults_the_sources_started_from():
    from kernels.codegen.gemm_form import host_gemm_form
    from kernels.codegen.streaming import host_rows_per_pass
    got = engine_bench._host_defaults()
    assert got["gemv_rows_per_pass"] == host_rows_per_pass()
    assert got["gemm_form"].endswith(f"(ALGO {host_gemm_form()})")


def test_set_changes_the_matching_knobs_and_refuses_a_value_they_cannot_take():
    import argparse

    import pytest

    from kernels.spec import DesignSpace, Param

    class Refused(Exception):
        pass

    class Parser(argparse.ArgumentParser):
        def error(self, message):
            raise Refused(message)

    space = DesignSpace((Param("G1_GR", "choice", choices=(1, 2, 4), default=4),
                         Param("G2_GR", "choice", choices=(1, 2, 4), default=4),
                         Param("G1_JB", "choice", choices=(16, 64), default=64)))
    point = space.default()
    ap = Parser()
    assert engine_bench._overrides(ap, ["G*_GR=1"], space, point) == {"G1_GR": 1, "G2_GR": 1}
    assert engine_bench._overrides(ap, ["G*_GR=4"], space, point) == {}          # already the value
    with pytest.raises(Refused, match="G1_GR must be one of"):
        engine_bench._overrides(ap, ["G*_GR=3"], space, point)
    with pytest.raises(Refused, match="PATTERN=VALUE"):
        engine_bench._overrides(ap, ["G1_GR"], space, point)
