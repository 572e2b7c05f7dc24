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
