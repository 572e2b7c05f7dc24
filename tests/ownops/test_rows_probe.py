"""The rows a matrix-vector pass sums by default (G<id>_GR) are this host's fastest: the probe
compiles the generator's own pass at every value and times it over weights past the cache;
the choice is cached per host, first writer wins, and a generated program takes it as its
default (or the value it is given)."""
import json

import pytest

from kernels.codegen import streaming
from kernels.codegen.matmul import GEMV_DOT


def test_the_probe_times_the_generators_own_pass_at_every_value_over_weights_past_the_cache():
    src = streaming.probe_source(2)
    body = GEMV_DOT.format(P="R8_", CSB=streaming.K, CSA=1, K=streaming.K)
    assert body in src and "#define R8_GR 8" in src and "#define R1_GR 1" in src
    got = streaming.measure(2, quiet=None)     # the quiet check: test_gemm_form_probe.py
    swept = got["matrices"] * streaming.N * streaming.K * 4
    assert swept >= 128 << 20
    for gr in streaming.ROWS:
        gbs = swept / got[gr] / 1e9
        assert 0.5 < gbs < 2000, (gr, gbs)     # a real sweep: neither skipped nor stalled


@pytest.mark.parametrize("seconds,rows", [
    ({1: 1.00, 2: 1.10, 4: 1.20, 8: 1.15}, 1),     # one row 17% faster: it wins
    ({1: 1.30, 2: 1.20, 4: 1.00, 8: 0.90}, 8),
    ({1: 1.30, 2: 1.20, 4: 1.00, 8: 0.98}, 4),     # 2% is inside the probe's noise: the default stays
    ({1: 1.30, 2: 1.20, 4: 1.00, 8: 1.10}, 4),
])
def test_another_value_replaces_four_rows_only_beyond_the_noise(seconds, rows):
    assert streaming.choose(seconds) == rows


def test_the_hosts_choice_is_measured_once_and_the_first_record_decides(fresh_cache, monkeypatch):
    calls = []

    def measure(threads, llc_bytes=0):
        calls.append(threads)
        return {1: 1.3, 2: 1.2, 4: 1.0, 8: 0.8, "matrices": 12}

    monkeypatch.setattr(streaming, "measure", measure)
    assert streaming.host_rows_per_pass() == 8
    [record] = fresh_cache.glob("rows-per-pass-*.json")
    assert json.loads(record.read_text())["seconds"] == {"1": 1.3, "2": 1.2, "4": 1.0, "8": 0.8}
    streaming.host_rows_per_pass.cache_clear()
    record.write_text(json.dumps({**json.loads(record.read_text()), "rows": 2}))   # another process wrote first
    assert streaming.host_rows_per_pass() == 2 and len(calls) == 1
    assert not list(fresh_cache.glob("*.tmp"))


def test_without_a_probe_the_default_is_four_rows(fresh_cache, monkeypatch):
    def broken(threads, llc_bytes=0):
        raise OSError("no compiler")

    monkeypatch.setattr(streaming, "measure", broken)
    assert streaming.host_rows_per_pass() == streaming.DEFAULT == 4
    assert not list(fresh_cache.glob("rows-per-pass-*.json"))      # nothing cached: it tries again next time


def test_a_generated_program_starts_from_the_rows_it_is_given_or_the_hosts(imported):
    from kernels.codegen import program
    from kernels.graph import store
    assert imported("bmm_transposed_scale").ok
    graph, _ = store.read_shape(store.lookup("bmm_transposed_scale"), 0)
    for rows in streaming.ROWS:
        space = program.generate(graph, gemv_rows=rows).space
        knobs = [p for p in space.params if p.name.endswith("_GR")]
        assert knobs and all(p.default == rows for p in knobs), rows
    space = program.generate(graph).space
    assert {p.default for p in space.params if p.name.endswith("_GR")} == {streaming.host_rows_per_pass()}
