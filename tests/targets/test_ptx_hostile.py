"""Hostile PTX candidates (``tests/hostile_ptx/*.ptx``) against the ptx target, on softmax.

Each file's header, like the C suite's (``tests/harness/test_hostile.py``)::

    // class: <failure class>
    // expect: <status the evaluator must give>
    // why: <one line: what the candidate does>
    // reason: <regex the outcome's reason must match>
    // where: gpu            (optional: it fails only when run; checked on a GPU host)
    // settings: run_timeout=20   (optional: EvalSettings fields)
    // params: ALGO=warp BLOCK=256  (the launch geometry of the ptx template)

Here, with no GPU, every candidate refused before running (static rules, the template
step's second look, assembly, audit) must be refused with its status and reason; the ones
that fail only when run (an out-of-bounds store, an endless loop) must pass every check
before running, and the control must end ``compiled_only``. On a GPU host they run through
the evaluator and must end with their expected status, the control ``ok``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kernels import targets
from kernels.harness.evaluator import EvalSettings, Evaluator
from kernels.harness.outcome import STATUSES
from kernels.targets.ptx import ptxas_path

HOSTILE_DIR = Path(__file__).resolve().parents[1] / "hostile_ptx"
PRE_RUN = {"rejected_static", "compile_error", "audit_failed"}
needs_ptxas = pytest.mark.skipif(ptxas_path() is None, reason="ptxas is not installed on this host")


@dataclass
class Candidate:
    path: Path
    klass: str
    expect: str
    why: str
    reason: str
    where: str = "here"
    settings: dict = field(default_factory=dict)
    params: dict = field(default_factory=dict)


def _value(text: str):
    return int(text) if re.fullmatch(r"-?\d+", text) else (float(text) if re.fullmatch(r"-?\d+\.\d*", text) else text)


def parse(path: Path) -> Candidate:
    header = {}
    for line in path.read_text().splitlines():
        m = re.match(r"//\s*(\w+):\s*(.*\S)\s*$", line)
        if not m:
            break
        header[m.group(1)] = m.group(2)
    missing = [k for k in ("class", "expect", "why") if k not in header]
    assert not missing, f"{path.name}: header lacks {', '.join(missing)}"
    assert set(header["expect"].split("|")) <= set(STATUSES), f"{path.name}: unknown status {header['expect']!r}"
    pairs = lambda text: {k: _value(v) for k, v in (kv.split("=", 1) for kv in (text or "").split())}  # noqa: E731
    return Candidate(path, header["class"], header["expect"], header["why"], header.get("reason", ""),
                     header.get("where", "here"), pairs(header.get("settings")), pairs(header.get("params")))


CANDIDATES = [parse(p) for p in sorted(HOSTILE_DIR.glob("*.ptx"))]


def _settings(c: Candidate) -> EvalSettings:
    kw = dict(run_timeout=60.0, compile_timeout=60.0, timing=False)
    kw.update({k: float(v) if k.endswith("timeout") else v for k, v in c.settings.items()})
    return EvalSettings(**kw)


def _evaluate(c: Candidate):
    return Evaluator(_settings(c)).evaluate(c.path.read_text(), c.params, "softmax", "ptx")


def _gpu() -> tuple[bool, str]:
    return targets.get("ptx").can_run()


def test_the_suite_covers_the_failure_classes_the_issue_names():
    classes = {c.klass for c in CANDIDATES}
    for needed in ("trap", "out-of-bounds store", "infinite loop", "wrong entry point", "extern call",
                   "reads a constant that isn't its input", "reads unrelated global memory", "system call",
                   "timer", "control"):
        assert needed in classes, needed
    assert len([c for c in CANDIDATES if c.klass != "control"]) >= 8


@needs_ptxas
@pytest.mark.parametrize("cand", [c for c in CANDIDATES if c.where == "here" and c.expect in PRE_RUN],
                         ids=lambda c: c.path.stem)
def test_a_hostile_ptx_candidate_is_refused_before_it_runs(cand):
    outcome = _evaluate(cand)
    assert outcome.status == cand.expect, f"{cand.path.name} ({cand.why}): {outcome.status}: {outcome.reason}"
    assert re.search(cand.reason, outcome.reason), f"{cand.path.name}: reason {outcome.reason!r}"
    assert "correctness" not in [s.name for s in outcome.stages]


@needs_ptxas
@pytest.mark.parametrize("cand", [c for c in CANDIDATES if c.where == "gpu" or c.klass == "control"],
                         ids=lambda c: c.path.stem)
def test_a_candidate_that_fails_only_when_run_passes_every_check_before_running(cand):
    """Here: static rules, the template step, ptxas and the audit all pass (the GPU must catch it)."""
    if _gpu()[0]:
        pytest.skip("this host has a GPU: the next test runs it")
    outcome = _evaluate(cand)
    assert outcome.status == "compiled_only", f"{cand.path.name}: {outcome.status}: {outcome.reason}"
    assert outcome.resources["registers"] > 0 and outcome.resources["arch"] == "sm_90a"


@needs_ptxas
@pytest.mark.parametrize("cand", [c for c in CANDIDATES if c.where == "gpu" or c.klass == "control"],
                         ids=lambda c: c.path.stem)
def test_on_a_gpu_the_runtime_failures_get_their_status(cand):
    ok, why = _gpu()
    if not ok:
        pytest.skip(f"GPU-only check (run by bench/gpu_campaign.py on a GPU host): {why}")
    control = next(c for c in CANDIDATES if c.klass == "control")
    try:
        first = _evaluate(control)
    except Exception as exc:   # an evaluator without the target seam raises for a third target
        pytest.skip(f"the evaluator does not run PTX candidates on this host yet ({type(exc).__name__}: {exc})")
    if first.status != "ok":
        pytest.skip(f"the evaluator does not run PTX candidates on this host yet (the control ended "
                    f"{first.status}: {first.reason[:200]})")
    outcome = first if cand is control else _evaluate(cand)
    assert outcome.status in cand.expect.split("|"), f"{cand.path.name}: {outcome.status}: {outcome.reason}"
    assert re.search(cand.reason or ".", outcome.reason), outcome.reason
