"""Inputs and references are built in a memory-limited child: a build that needs more than its
limit, dies or hangs is a verdict with the reason, and the evaluating process lives on to
evaluate the next candidate."""
import dataclasses
import os
import re
import signal
import time

import numpy as np
import pytest

from kernels import workloads
from kernels.harness import build
from kernels.harness import cases as C
from kernels.harness.evaluator import EvalSettings, Evaluator
from kernels.spec import Shape, SpecError

WL = workloads.get("softmax")
TPL = WL.template("cpu")
PARAMS = {**TPL.space.default(), "ALGO": "two_pass"}


SMALL = Shape.of(rows=256, cols=1024)


def evaluate(wl):
    settings = EvalSettings(timing=False, timing_shape=SMALL, typical_checks=False)
    return Evaluator(settings).evaluate(TPL.source("two_pass"), PARAMS, wl, "cpu")


def softmax_whose_reference(name, extra):
    """Softmax, with ``extra(feeds)`` run first by its reference (a big intermediate, a hang…)."""
    def reference(feeds, shape):
        extra(feeds)
        return WL.reference(feeds, shape)
    return dataclasses.replace(WL, name=name, reference=reference)


def assert_the_next_candidate_is_evaluated():
    outcome = evaluate(WL)
    assert outcome.status == "ok", outcome.reason


def test_a_reference_that_needs_more_than_the_childs_limit_is_a_verdict_and_the_process_lives_on(monkeypatch):
    monkeypatch.setenv("INT21_BUILD_MB", "300")     # the operator's cap, set low
    hungry = softmax_whose_reference("softmax_hungry", lambda feeds: np.ones(600 << 17).sum())   # 600 MiB
    pid = os.getpid()
    outcome = evaluate(hungry)
    assert outcome.status == "crashed"
    assert "could not build the data" in outcome.reason
    limit = re.search(r"more memory than the (\d+) MiB its child may use", outcome.reason)
    assert limit and int(limit.group(1)) <= 300, outcome.reason
    assert "INT21_BUILD_MB" in outcome.reason and "not the kernel" in outcome.reason
    assert outcome.stages[-1].name == "inputs" and outcome.stages[-1].details == {"build": "memory"}
    assert os.getpid() == pid
    assert_the_next_candidate_is_evaluated()


def test_an_intermediate_no_footprint_counts_is_refused_by_the_default_limit_too():
    # 1 TiB: within no limit this host gives a child (the shape itself is small)
    huge = softmax_whose_reference("softmax_huge", lambda feeds: np.empty(1 << 37).fill(1.0))
    outcome = evaluate(huge)
    assert outcome.status == "crashed" and "more memory than" in outcome.reason
    assert_the_next_candidate_is_evaluated()


def test_a_build_past_its_time_is_killed_and_said_so(monkeypatch):
    monkeypatch.setenv("INT21_BUILD_SECONDS", "1")
    slow = softmax_whose_reference("softmax_slow", lambda feeds: time.sleep(60))
    t0 = time.monotonic()
    outcome = evaluate(slow)
    assert time.monotonic() - t0 < 30
    assert outcome.status == "crashed" and "ran past 1 s (INT21_BUILD_SECONDS)" in outcome.reason
    assert_the_next_candidate_is_evaluated()


def test_a_build_child_killed_by_a_signal_is_said_so():
    killed = softmax_whose_reference("softmax_killed", lambda feeds: os.kill(os.getpid(), signal.SIGKILL))
    outcome = evaluate(killed)
    assert outcome.status == "crashed" and "was killed by signal 9" in outcome.reason
    assert_the_next_candidate_is_evaluated()


def test_inputs_and_references_are_never_computed_in_the_evaluating_process(tmp_path):
    where = tmp_path / "pids"

    def note(_feeds):
        with open(where, "a") as f:
            f.write(f"{os.getpid()}\n")

    def make_inputs(shape, dist, seed):
        note(None)
        return WL.make_inputs(shape, dist, seed)
    spy = dataclasses.replace(softmax_whose_reference("softmax_spy", note), make_inputs=make_inputs)
    settings = EvalSettings(timing_shape=SMALL, typical_checks=False, min_calls=20, max_calls=40, timing_budget_s=0.2)
    outcome = Evaluator(settings).evaluate(
        TPL.source("two_pass"), PARAMS, spy, "cpu")
    assert outcome.status == "ok", outcome.reason
    pids = {int(p) for p in where.read_text().split()}
    assert pids and os.getpid() not in pids


def test_what_comes_back_is_read_only_and_cached_per_process():
    C.forget_bases()
    base = C.base_set(WL, WL.shapes.typical[0], WL.distributions[0])
    assert C.base_set(WL, WL.shapes.typical[0], WL.distributions[0]) is base
    x = next(iter(base.inputs.values()))
    with pytest.raises(ValueError):
        x[0, 0] = 1.0


def test_a_workloads_own_error_is_raised_as_it_is():
    def broken(feeds, shape):
        raise SpecError("this workload is broken")
    with pytest.raises(ValueError, match="this workload is broken"):
        build.in_child(lambda: broken(None, None), budget=1 << 28, what="a broken thing")


@pytest.mark.parametrize("value", ["0", "-5", "off", "inf", "nan"])
def test_the_limit_cannot_be_switched_off(monkeypatch, value):
    monkeypatch.setenv("INT21_BUILD_MB", value)
    with pytest.raises(SpecError, match="INT21_BUILD_MB"):
        build.cap_bytes()


def test_small_cases_past_the_cache_size_are_still_handed_to_the_evaluation_that_asked(monkeypatch):
    monkeypatch.setattr(C, "SMALL_CACHE_BYTES", 1)     # every build evicts what came before
    first = C.small_cases(WL, seeds=2, shapes=[("awkward", Shape.of(rows=5, cols=99))])
    C.materialise_all(WL, first)
    both = first + C.small_cases(WL, seeds=2, shapes=[("aligned", Shape.of(rows=4, cols=64))])
    C.materialise_all(WL, both)
    assert all(c.reference and c.inputs for c in both)
