"""The form a deep Linear starts in (packed, ALGO 1, or dot tiles, ALGO 3) is this host's
faster: the probe generates both forms of the prefill's Linear shapes through the generator,
checks each against NumPy and times them interleaved in a child; the old rule (dot tiles with
32 vector registers) stays the incumbent, the choice is kept per host, first writer wins, and
a generated program starts from it (or from the form it is given)."""
import json

import pytest

from kernels.codegen import gemm_form


def test_the_probe_builds_both_forms_through_the_generator_and_times_real_products():
    sources = gemm_form.sources(2)
    assert set(sources) == {(*s, f) for s in gemm_form.SHAPES for f in gemm_form.FORMS}
    for (m, n, k, form), text in sources.items():
        assert f"#define G0_ALGO {form}" in text and "void kernel(" in text, (m, n, k, form)
    assert gemm_form.CHILD_ENV == {"OMP_WAIT_POLICY": "PASSIVE"}     # timed as the harness times engines
    got = gemm_form.measure(2, quiet=None)     # the quiet check has its own test below
    flops = sum(2.0 * m * n * k for m, n, k in gemm_form.SHAPES)
    for form in gemm_form.FORMS:
        assert got["error"][str(form)] < 1e-4, got        # each form computed x @ w.T
        gflops = flops / got[form] / 1e9
        assert 1 < gflops < 20000, (form, gflops)        # a real product: neither skipped nor stalled


@pytest.mark.parametrize("seconds,incumbent,form", [
    ({1: 1.00, 3: 1.20}, 3, 1),      # packed 17% faster than the incumbent dot tiles: it wins
    ({1: 0.98, 3: 1.00}, 3, 3),      # 2% is inside the probe's noise: the incumbent stays
    ({1: 1.00, 3: 0.60}, 1, 3),
    ({1: 1.00, 3: 1.10}, 1, 1),
    ({1: 1.00, 3: float("inf")}, 3, 1),   # a form that computed wrongly is timed as never finishing
])
def test_the_other_form_replaces_the_incumbent_only_beyond_the_noise(seconds, incumbent, form):
    assert gemm_form.choose(seconds, incumbent) == form


def test_the_hosts_form_is_measured_once_and_the_first_record_decides(fresh_cache, monkeypatch):
    calls = []

    def measure(threads):
        calls.append(threads)
        return {1: 0.010, 3: 0.015, "error": {"1": 1e-7, "3": 1e-7}}

    monkeypatch.setattr(gemm_form, "measure", measure)
    assert gemm_form.host_gemm_form() == 1
    [record] = fresh_cache.glob("gemm-form-*.json")
    assert json.loads(record.read_text())["seconds"] == {"1": 0.010, "3": 0.015}
    gemm_form.host_gemm_form.cache_clear()
    record.write_text(json.dumps({**json.loads(record.read_text()), "form": 3}))   # another process wrote first
    assert gemm_form.host_gemm_form() == 3 and len(calls) == 1
    assert not list(fresh_cache.glob("*.tmp"))


def test_a_form_that_computes_wrongly_is_never_chosen_however_fast(fresh_cache, monkeypatch):
    monkeypatch.setattr(gemm_form, "measure",
                        lambda threads: {1: 0.001, 3: 0.010, "error": {"1": 0.5, "3": 1e-7}})
    assert gemm_form.host_gemm_form() == 3
    monkeypatch.setattr(gemm_form, "measure",
                        lambda threads: {1: 0.010, 3: 0.001, "error": {"1": 1e-7, "3": 0.5}})
    for record in fresh_cache.glob("gemm-form-*.json"):
        record.unlink()
    gemm_form.host_gemm_form.cache_clear()
    assert gemm_form.host_gemm_form() == 1


def test_without_a_probe_the_registers_rule_decides_and_nothing_is_kept(fresh_cache, monkeypatch):
    from kernels.codegen.family import host_vector_registers

    def broken(threads):
        raise OSError("no compiler")

    monkeypatch.setattr(gemm_form, "measure", broken)
    assert gemm_form.host_gemm_form() == (3 if host_vector_registers() >= 32 else 1)
    assert not list(fresh_cache.glob("gemm-form-*.json"))      # nothing kept: it tries again next time


def test_a_generated_program_starts_from_the_form_it_is_given_or_the_hosts():
    from kernels.codegen import program
    graph = gemm_form.linear(64, 96, 512)
    for form in gemm_form.FORMS:
        assert program.generate(graph, gemm_form=form).space.param("G0_ALGO").default == form
    assert program.generate(graph).space.param("G0_ALGO").default == gemm_form.host_gemm_form()
    shallow = gemm_form.linear(64, 96, 128)       # too shallow for the dot tiles' lane sums: packed
    assert program.generate(shallow, gemm_form=3).space.param("G0_ALGO").default == 1


def test_engine_host_shows_what_each_probe_chose_and_from_what_and_measure_replaces_it(fresh_cache, monkeypatch,
                                                                                        capsys):
    from django.core.management import call_command

    from kernels.codegen import program, streaming
    calls = []

    def fake(gemm: dict, rows: dict):
        monkeypatch.setattr(gemm_form, "measure", lambda threads: calls.append("gemm") or gemm)
        monkeypatch.setattr(streaming, "measure", lambda threads, llc_bytes=0: calls.append("rows") or rows)

    def host(*args) -> str:
        call_command("engine", "host", *args)
        return capsys.readouterr().out

    fake({1: 0.010, 3: 0.008, "error": {"1": 1e-7, "3": 1e-7}}, {1: 1.3, 2: 1.2, 4: 1.0, 8: 0.8, "matrices": 12})
    data = json.loads(host("--json"))
    assert data["gemm_form"]["form"] == 3 and data["gemm_form"]["measured"]
    assert data["gemm_form"]["seconds"] == {"1": 0.010, "3": 0.008}
    assert data["rows_per_pass"]["rows"] == 8 and data["rows_per_pass"]["matrices"] == 12
    assert data["cache_dir"] == str(fresh_cache) and calls == ["gemm", "rows"]
    text = host()
    assert "a deep Linear starts dot tiles (ALGO 3)" in text and "packed 10.00 ms, dot tiles 8.00 ms" in text
    assert "a matrix-vector pass sums 8 weight rows" in text and "8 rows 800.0 ms" in text
    assert calls == ["gemm", "rows"]                 # read back, not measured again

    fake({1: 0.005, 3: 0.010, "error": {"1": 1e-7, "3": 1e-7}}, {1: 0.9, 2: 1.2, 4: 1.0, 8: 1.1, "matrices": 12})
    data = json.loads(host("--measure", "--json"))
    assert (data["gemm_form"]["form"], data["rows_per_pass"]["rows"]) == (1, 1) and len(calls) == 4
    space = program.generate(gemm_form.linear(64, 96, 512)).space      # programs generated from now on
    assert space.param("G0_ALGO").default == 1 and space.param("G0_GR").default == 1

    def broken(*args, **kw):
        raise OSError("no compiler")

    monkeypatch.setattr(gemm_form, "measure", broken)
    monkeypatch.setattr(streaming, "measure", broken)
    text = host("--measure")            # measuring again fails: the earlier records stand, and it says so
    assert text.count("measuring again was not kept (no compiler): the earlier measurement stands") == 2
    assert "a deep Linear starts packed (ALGO 1)" in text and "a matrix-vector pass sums one weight row" in text
    for record in fresh_cache.glob("*.json"):
        record.unlink()
    text = host()
    assert "not measured (no compiler): the registers rule decides until a later process measures" in text
    assert "a matrix-vector pass sums 4 weight rows" in text and "not measured (no compiler): four rows" in text


def test_timings_taken_beside_other_programs_are_not_kept(fresh_cache):
    """The hostile case for both probes: two busy loops share the cores with the probe's
    timing child. Its timings would pick a form (or a row count) for the host for good, so
    they are refused and nothing is kept; the rule decides until a later process measures."""
    import subprocess
    import sys

    from kernels.codegen import hostprobe, streaming
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        with pytest.raises(hostprobe.HostBusy, match="other programs took"):
            streaming.measure(2)
        record = gemm_form.host_record()
        assert not record["measured"] and "other programs took" in record["reason"], record
        assert record["form"] == record["incumbent"]
    finally:
        for p in busy:
            p.kill()
            p.wait()
    assert not list(fresh_cache.glob("gemm-form-*.json")) and not list(fresh_cache.glob("rows-per-pass-*.json"))
