"""The hostile-candidate suite (docs/harness.md: every kernel is untrusted).

Every ``tests/hostile/*.c`` is a candidate for the softmax entry point with a header::

    // class: <failure class>
    // expect: <status the evaluator must give>
    // why: <one line: what the candidate does>
    // reason: <regex the outcome's reason must match>           (optional)
    // workload: matmul                                          (optional: default softmax)
    // settings: run_timeout=5 timing=1 timing_shape=192x1024     (optional: EvalSettings fields)
    // params: THREADS=1                                          (optional)
    // now: <status(es) the harness gives today, a|b>             (with gap)
    // now_reason: <regex the reason matches today>               (optional, with gap)
    // evidence: marker    (with gap: counts only if /tmp/int21-pwned was really created)
    // gap: harness gap: <what the harness misses, and the fix>   (optional: strict xfail)

Each one is evaluated on its workload (softmax unless it says) on "cpu" with settings tuned for speed but not weakened in
kind (5 seeds, every correctness shape and distribution, the real sandbox), and must end
with its expected status and a sentence saying why. After each, the test process must be
unharmed: same working directory, standard descriptors open, no marker file from hostile
code, no file in the project tree that the sandbox user created. ``control_*.c`` are
known-good kernels that must pass. A ``gap`` line marks a hole in evaluator/child/sandbox
that this suite documents: the test is a strict xfail that only counts as "expected" when
the harness gives exactly the documented ``now`` status (it raises :class:`HarnessGap`);
any other result is a real failure, and a fixed harness makes it XPASS (remove the lines).
"""
from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kernels.harness import sandbox
from kernels.harness.evaluator import EvalSettings, Evaluator
from kernels.harness.outcome import STATUSES
from kernels.spec import Shape

HOSTILE_DIR = Path(__file__).resolve().parents[1] / "hostile"
PROJECT_ROOT = Path(__file__).resolve().parents[2]
MARKER = Path("/tmp/int21-pwned")          # what hostile candidates try to create
PRE_RUN = {"rejected_static", "compile_error", "audit_failed"}  # the kernel never ran
SKIP_DIRS = {".venv", ".git", "__pycache__", ".pytest_cache", "node_modules", ".cache"}
TIMING_SHAPE = Shape.of(rows=256, cols=1024)


@dataclass
class Candidate:
    path: Path
    klass: str
    expect: str
    why: str
    reason: str | None = None
    settings: dict = field(default_factory=dict)
    params: dict = field(default_factory=dict)
    gap: str | None = None
    now: str | None = None
    now_reason: str | None = None
    evidence: str | None = None
    workload: str = "softmax"

    @property
    def stem(self) -> str:
        return self.path.stem

    @property
    def source(self) -> str:
        return self.path.read_text()


def _value(text: str):
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if re.fullmatch(r"-?\d+\.\d*", text):
        return float(text)
    return text


def parse(path: Path) -> Candidate:
    header = {}
    for line in path.read_text().splitlines():
        m = re.match(r"//\s*(\w+):\s*(.*\S)\s*$", line)
        if not m:
            break
        header[m.group(1)] = m.group(2)
    missing = [k for k in ("class", "expect", "why") if k not in header]
    assert not missing, f"{path.name}: header lacks {', '.join(missing)}"
    assert header["expect"] in STATUSES, f"{path.name}: unknown status {header['expect']!r}"

    def pairs(text):
        return {k: _value(v) for k, v in (kv.split("=", 1) for kv in (text or "").split())}

    assert ("gap" in header) == ("now" in header), f"{path.name}: 'gap' and 'now' go together"
    assert set(header.get("now", "ok").split("|")) <= set(STATUSES), f"{path.name}: unknown status in 'now'"
    return Candidate(path, header["class"], header["expect"], header["why"], header.get("reason"),
                     pairs(header.get("settings")), pairs(header.get("params")), header.get("gap"),
                     header.get("now"), header.get("now_reason"), header.get("evidence"),
                     header.get("workload", "softmax"))


class HarnessGap(AssertionError):
    """The harness still has the documented hole (the only failure a gap's xfail accepts)."""


CANDIDATES = [parse(p) for p in sorted(HOSTILE_DIR.glob("*.c"))]


def settings_for(c: Candidate) -> EvalSettings:
    """Fast but not weaker in kind: full seeds/shapes/distributions, real sandbox, real limits
    (only shorter where a candidate is meant to hit them)."""
    s = dict(c.settings)
    from kernels import workloads
    wl = workloads.get(c.workload)
    timing = bool(s.pop("timing", 0))
    kw = dict(run_timeout=60.0, compile_timeout=60.0, timing=timing)
    if timing:  # the timed phase on a small shape, enough calls to pass any "after N calls" trigger
        kw.update(timing_shape=TIMING_SHAPE if c.workload == "softmax" else wl.shapes.aligned[0], min_calls=40)
    for key, value in s.items():
        assert hasattr(EvalSettings, key), f"{c.path.name}: unknown setting {key}"
        if key == "timing_shape":  # the workload's dims, e.g. ROWSxCOLS
            value = wl.shape_from_text(str(value))
        kw[key] = float(value) if key.endswith("timeout") else value
    return EvalSettings(**kw)


def _tree_files() -> set[Path]:
    found = set()
    for root, dirs, files in os.walk(PROJECT_ROOT):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
        found.update(Path(root) / f for f in files)
    return found


HOST_FILES = ("/etc/hostname", "/etc/hosts", "/etc/passwd")


def _host_files() -> dict:
    out = {}
    for path in HOST_FILES:
        try:
            st = os.stat(path)
            out[path] = (st.st_mtime_ns, st.st_size, Path(path).read_bytes())
        except OSError:
            out[path] = None
    return out


def _box_processes() -> list[int]:
    """Processes of the box users this test process's evaluations ran as, still alive (none
    may outlive its evaluation, whatever session or process group it put itself in)."""
    from kernels.harness.box import Box, pids_of_users
    if os.geteuid() != 0:
        return []
    return sorted(pids_of_users(Box.used_uids))


@pytest.fixture
def unharmed():
    """Snapshots what hostile code could damage; the test asserts on it afterwards."""
    MARKER.unlink(missing_ok=True)
    state = {"cwd": os.getcwd(), "pid": os.getpid(), "files": _tree_files(), "host": _host_files()}
    yield state
    MARKER.unlink(missing_ok=True)  # never let one (xfail) candidate's marker fail the next


def assert_unharmed(state: dict) -> None:
    assert os.getpid() == state["pid"]
    assert os.getcwd() == state["cwd"], "the test process's working directory changed"
    for fd in (0, 1, 2):
        os.fstat(fd)  # raises if a standard descriptor was closed under us
    assert not MARKER.exists(), f"hostile code created {MARKER} on the host"
    assert _host_files() == state["host"], "a host file outside the sandbox changed"
    left = _box_processes()
    assert not left, f"processes of an evaluation outlived it: {left}"
    # Other engineers edit the tree concurrently, so only flag files that hostile code
    # would leave: ones named like the marker, or owned by someone else (the sandbox user).
    new = _tree_files() - state["files"]
    foreign = sorted(str(p) for p in new if p.exists() and
                     ("pwned" in p.name or p.stat().st_uid != os.getuid()))
    assert not foreign, f"new files in the project tree: {foreign}"


def assert_sentence(reason: str) -> None:
    assert reason and reason.strip(), "the outcome has no reason"
    assert reason[0].isupper() and reason.rstrip().endswith("."), f"not a sentence: {reason!r}"
    assert len(reason.split()) >= 3, f"not a sentence: {reason!r}"


_TIMEOUTS: dict = {}  # stem -> (seconds taken, run limit, fork server still running)


def check(c: Candidate, unharmed: dict) -> None:
    settings = settings_for(c)
    zygote = sandbox.Zygote.for_this_thread() if c.expect == "timeout" else None
    started = time.monotonic()
    outcome = Evaluator(settings).evaluate(c.source, c.params, c.workload, "cpu")
    took = time.monotonic() - started
    if zygote is not None:
        _TIMEOUTS[c.stem] = (took, settings.run_timeout, zygote.alive())
    where = f"{c.path.name} ({c.klass}: {c.why}) -> {outcome.status}: {outcome.reason} [{took:.1f} s]"
    if c.gap and outcome.status in c.now.split("|") and outcome.status != c.expect:
        # Only the documented hole counts: an attack that silently stopped working must not
        # keep passing as "expected to fail".
        assert not c.now_reason or re.search(c.now_reason, outcome.reason), \
            f"the gap did not reproduce (reason does not match /{c.now_reason}/): {where}"
        assert c.evidence != "marker" or MARKER.exists(), f"the gap did not reproduce (no {MARKER}): {where}"
        raise HarnessGap(f"{where}; {c.gap}")
    assert outcome.status == c.expect, where
    assert_sentence(outcome.reason)
    if c.reason:
        assert re.search(c.reason, outcome.reason, re.I), f"reason does not match /{c.reason}/: {where}"
    if c.expect in PRE_RUN:
        assert outcome.stage("correctness") is None, f"the kernel ran although it was refused: {where}"
    assert_unharmed(unharmed)


def _make_test(c: Candidate):
    def test(unharmed):
        check(c, unharmed)
    verb = "accepts" if c.expect == "ok" else "rejects"
    test.__name__ = f"test_it_{verb}_{c.stem}"
    test.__doc__ = f"{c.klass}: {c.why} (expect {c.expect})"
    if c.gap:
        test = pytest.mark.xfail(strict=True, raises=HarnessGap, reason=c.gap)(test)
    return test


def _define_tests(candidates) -> None:
    for c in candidates:
        globals()[f"test_it_{'accepts' if c.expect == 'ok' else 'rejects'}_{c.stem}"] = _make_test(c)


# Hangs go last (just before the final control): today every timeout also costs a
# fork-server restart, which the next evaluation pays (see the hang test below).
_define_tests(c for c in CANDIDATES if c.expect != "timeout")


def test_the_suite_covers_every_class_and_has_controls():
    classes = {c.klass for c in CANDIDATES}
    hostile = [c for c in CANDIDATES if c.expect != "ok"]
    controls = [c for c in CANDIDATES if c.stem.startswith("control_")]
    assert len(hostile) >= 30
    assert controls and all(c.expect == "ok" for c in controls)
    assert all(c.expect != "ok" for c in hostile if not c.stem.startswith("control_"))
    for needed in ("stale output", "partial write", "input mutation", "null candidate", "shape overfitting",
                   "distribution overfitting", "precision loss", "NaN output", "uninitialised read",
                   "behaves differently after N calls", "work at load time", "caching across calls",
                   "out-of-bounds write", "hidden threads", "process use", "file use", "network use",
                   "crash", "hang", "memory blow-up", "output flood", "compile-time include attack",
                   "compile bomb", "timer read", "inline assembly"):
        assert needed in classes, f"no candidate for {needed}"


def test_the_contest_judge_suite_covers_the_red_teams_classes():
    """The classes a red team got past the old in-process harness (issue: the harness as a
    contest judge): each has fixtures here, across the workloads, each one rejected."""
    stems = {c.stem for c in CANDIDATES}
    for needed in ("escape_capi_dlsym_pyrun", "escape_dlopen_libpython", "escape_early_done_record",
                   "escape_forged_output_path", "escape_symlink_plant", "escape_setsid_leftover_process",
                   "escape_interpose_runner_call", "load_init_section_spelled_with_underscores", "load_init_section_pasted",
                   "load_preinit_array_pasted", "load_fini_section_pasted", "load_code_in_own_section",
                   "cache_by_call_parity", "cache_keyed_on_one_element", "cache_keyed_on_sampled_elements",
                   "cache_matmul_after_calls", "kda_state_restarts_every_256_steps", "matmul_drops_k_beyond_1024",
                   "rmsnorm_aligned_path_drops_eps", "layernorm_aligned_path_one_pass_variance",
                   "sabotage_omp_set_num_threads", "sabotage_omp_set_num_threads_pasted",
                   "sabotage_longjmp_out_of_parallel", "sabotage_longjmp_pasted", "sabotage_mxcsr_round_to_zero",
                   "sabotage_mxcsr_pasted_builtin", "sabotage_mxcsr_generated_code", "static_frame_address_pasted",
                   "static_return_address_pasted", "static_pragma_optimize_stringized",
                   "static_pragma_optimize_pasted_operator", "static_pragma_dependency_probe",
                   "static_attribute_optimize_ofast", "threads_declares_one_uses_two"):
        assert needed in stems, f"no fixture {needed}"
    assert {c.workload for c in CANDIDATES} >= {"softmax", "matmul", "kda", "rmsnorm", "layernorm"}


def test_a_hostile_candidate_cannot_change_what_the_next_candidate_is_timed_on(unharmed):
    """Evaluations in one worker are independent: a known-good control timed right after a
    hostile candidate, at the same shape, must still pass."""
    hostile = next(c for c in CANDIDATES if c.stem == "escape_poison_shared_timing_input")
    control = next(c for c in CANDIDATES if c.stem == "control_scalar")
    settings = settings_for(hostile)
    Evaluator(settings).evaluate(hostile.source, {}, "softmax", "cpu")  # whatever it gets
    MARKER.unlink(missing_ok=True)
    after = Evaluator(settings).evaluate(control.source, {}, "softmax", "cpu")
    said = f"the control, timed after a hostile candidate: {after.status}: {after.reason}"
    if after.status == "wrong" and "input x was modified" in after.reason:
        raise HarnessGap(said)
    assert after.status == "ok", said


_define_tests(c for c in CANDIDATES if c.expect == "timeout")


def test_a_hang_costs_one_run_limit_and_leaves_the_fork_server_running(unharmed):
    """Uses what the hang candidate's own test saw (runs it here when selected alone)."""
    hang = next(c for c in CANDIDATES if c.stem == "hang_spin_forever")
    if hang.stem not in _TIMEOUTS:
        check(hang, unharmed)
    took, limit, fork_server_alive = _TIMEOUTS[hang.stem]
    problems = []
    if took > 1.5 * limit + 3:
        problems.append(f"a {limit:g} s run limit cost {took:.1f} s")
    if not fork_server_alive:
        problems.append("the fork server was stopped")
    if problems:
        raise HarnessGap("; ".join(problems))


def test_a_known_good_control_still_passes_after_the_suite(unharmed):
    """Runs last: the evaluator (and its fork server) survived every hostile candidate."""
    control = next(c for c in CANDIDATES if c.stem == "control_scalar")
    check(control, unharmed)
