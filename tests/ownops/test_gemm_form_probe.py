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
    got = gemm_form.measure(2)
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
