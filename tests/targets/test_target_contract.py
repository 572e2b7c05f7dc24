"""Every registered target keeps the Target contract (kernels/targets/base.py): the evaluator
never asks which target it has, so each one must answer every question itself."""
import inspect

import pytest

from kernels import targets, workloads
from kernels.harness.process import Reply
from kernels.targets.base import Artifact, CompileFailure

NAMES = targets.names()
METHODS = ("available", "fingerprint", "compile", "audit", "can_run", "natural_values", "prepare", "start",
           "call_tokens", "call_problems", "ceilings")


@pytest.mark.parametrize("name", NAMES)
def test_every_target_answers_every_question_of_the_contract(name):
    tgt = targets.get(name)
    assert tgt.name == name and isinstance(tgt.language, str)
    for method in METHODS:
        assert callable(getattr(tgt, method, None)), f"{name} has no {method}()"
    assert isinstance(tgt.min_timed_calls, int) and tgt.min_timed_calls >= 0
    assert tgt.timer in ("wall", "device")
    ok, why = tgt.available()
    assert isinstance(ok, bool) and (ok or why)
    can, why_not = tgt.can_run()
    assert isinstance(can, bool) and (can or why_not)
    assert tgt.fingerprint() == tgt.fingerprint() and tgt.fingerprint().get("target") == name
    assert isinstance(tgt.ceilings() if name != "cpu" else {}, dict)


@pytest.mark.parametrize("name", NAMES)
def test_every_targets_seeds_compile_audit_and_become_runnable_where_its_toolchain_is(name):
    tgt = targets.get(name)
    if not tgt.available()[0]:
        pytest.skip(f"{name}: {tgt.available()[1]}")
    seeded = [wl for wl in workloads.all_workloads() if name in wl.templates]
    assert seeded, f"no workload has seeds for {name}"
    wl = seeded[0]
    source, params = wl.template(name).seeds()[0]
    art = tgt.compile(source, params, {"entry": "kernel", "params": params})
    assert isinstance(art, Artifact), getattr(art, "reason", art)
    audit = tgt.audit(art, {"entry": "kernel", "params": params})
    assert audit.ok, audit.problems
    assert tgt.prepare(art, wl, {"entry": "kernel", "params": params}) is not None
    bad = tgt.compile("this is not a kernel", {}, {"entry": "kernel"})
    assert isinstance(bad, CompileFailure) and bad.reason


@pytest.mark.parametrize("name", NAMES)
def test_every_target_names_a_calls_arguments_and_finds_nothing_wrong_with_a_clean_reply(name):
    tgt = targets.get(name)
    seeded = [wl for wl in workloads.all_workloads() if name in wl.templates]
    wl = seeded[0]
    shape = wl.shapes.minimal[0]
    params = wl.template(name).space.default()
    offsets_in = {n: 4096 * (i + 1) for i, n in enumerate(wl.input_names())}
    offsets_out = {n: 4096 * (i + 1) for i, n in enumerate(wl.output_names())}
    scalars = {a.name: 1.0 for a in wl.args if a.kind == "f32"}
    tokens = tgt.call_tokens(wl, shape, scalars, inputs=offsets_in, outputs=offsets_out, params=params)
    assert isinstance(tokens, str) and tokens
    assert len([t for t in tokens.split() if t[0] in "iodf"]) == len(wl.args)

    class Proc:
        mxcsr, omp_threads = "1f80", "2"
    clean = Reply("done", fields=["1", "1f80", "2", "0", "0"]) if name == "cpu" else \
        Reply("done", fields=["1", "0.001", "-"])
    assert tgt.call_problems(clean, Proc(), inputs=None, outputs=None, threads_declared=None) == []


def test_the_evaluator_never_branches_on_a_target_name():
    from kernels.harness import cases, evaluator, phases, process, sanity, server, timing
    for module in (evaluator, phases, process, timing, cases, sanity, server):
        text = inspect.getsource(module)
        for literal in ('"cuda"', "'cuda'", '== "cpu"', "== 'cpu'", '"ptx"'):
            assert literal not in text, f"{module.__name__} tests the target's name ({literal})"
