"""The capture sandbox holds against hostile problem files: files, sockets, processes,
endless loops and endless allocation — at import time, in __init__ and in forward — are
each refused with a reason; nothing escapes (no marker file appears) and nothing is left
running; the test process is unharmed."""
import os
import time
from pathlib import Path

import pytest

from tests.ownops.problem_files import HOSTILE, source
from kernels.graph import capture

LIMITS = capture.CaptureLimits(wall_seconds=25, cpu_seconds=60, memory_mb=1024)
WHERE = ("import", "init", "forward")
# A problem that never returns costs its whole wall limit: those tests use a shorter one.
LOOP_LIMITS = capture.CaptureLimits(wall_seconds=8, cpu_seconds=60, memory_mb=1024)


def leftovers() -> list[str]:
    """Processes still running the capture child or the hostile commands."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "int21_hostile" in cmd or ("capture_child" in cmd and "capture_server" not in cmd):
            found.append(cmd)
    return found


def run(name: str, limits=LIMITS):
    for marker in Path("/tmp").glob("int21_hostile_*"):
        marker.unlink()
    result = capture.capture(source(name, HOSTILE), limits=limits)
    time.sleep(0.2)
    assert not list(Path("/tmp").glob("int21_hostile_*")), "a hostile problem left a file behind"
    assert not leftovers()
    assert isinstance(result, capture.CaptureFailure), f"{name} was captured"
    return result


@pytest.mark.parametrize("where", WHERE)
def test_it_refuses_a_problem_that_opens_a_file(where):
    r = run(f"open_file_{where}")
    assert r.kind == "forbidden" and "opening files" in r.reason


@pytest.mark.parametrize("where", WHERE)
def test_it_refuses_a_problem_that_opens_a_socket(where):
    r = run(f"socket_{where}")
    assert r.kind == "forbidden" and "sockets" in r.reason


@pytest.mark.parametrize("where", WHERE)
def test_it_refuses_a_problem_that_starts_a_process(where):
    r = run(f"process_{where}")
    assert r.kind == "forbidden" and "processes" in r.reason


def test_it_refuses_a_problem_that_runs_a_program_through_subprocess():
    r = run("spawn_subprocess_import")
    assert r.kind == "forbidden"


def test_it_refuses_a_problem_that_reads_host_files():
    r = run("read_secrets_forward")
    assert r.kind == "forbidden"
    assert "root:" not in r.details.get("stdout_tail", "")


TRIVIAL = """import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return x * 2.0
def get_inputs():
    return [torch.randn(4, 8)]
def get_init_inputs():
    return []
"""


@pytest.fixture(scope="module")
def warm_capture_server():
    """The capture fork server's start (torch imported and warmed up) is not the loop's time."""
    assert not isinstance(capture.capture(TRIVIAL, limits=LIMITS), capture.CaptureFailure)


@pytest.mark.parametrize("where", WHERE)
def test_it_stops_a_problem_that_never_returns(where, warm_capture_server):
    start = time.monotonic()
    r = run(f"loop_{where}", LOOP_LIMITS)
    assert r.kind == "timeout" and "8 s limit" in r.reason
    assert time.monotonic() - start < LOOP_LIMITS.wall_seconds + 15


@pytest.mark.parametrize("where", WHERE)
def test_it_refuses_a_problem_that_allocates_without_end(where):
    r = run(f"allocate_{where}")
    assert r.kind == "memory", r.reason
    assert "memory" in r.reason


def test_bool_and_integer_buffers_from_the_child_are_parsed_strictly():
    """Bool and integer buffers now carry bytes (a causal mask, positions): a child that sends
    a bool other than 0/1 or an integer array of the wrong length is refused as malformed, and
    integer bytes where only float32 may be (a sample) by their type; none is translated."""
    import dataclasses
    import json

    raw = capture.run_child(source("causal_mask_buffers"), limits=LIMITS)
    assert isinstance(raw, capture.RawCapture), raw
    assert not isinstance(capture.from_raw(raw), capture.CaptureFailure)
    weights = raw.header["weights"]
    mask = next(r for r in weights.values() if r["dtype"] == "torch.bool")
    ids = next(r for r in weights.values() if r["dtype"] == "torch.int64")

    def tampered(blob=raw.blob, kind="protocol", **header):
        got = capture.from_raw(dataclasses.replace(raw, blob=blob, header={**json.loads(json.dumps(raw.header)), **header}))
        assert isinstance(got, capture.CaptureFailure) and got.kind == kind, got
        return got.reason

    blob = bytearray(raw.blob)
    blob[mask["offset"]] = 2
    assert "bool" in tampered(bytes(blob))
    short = {k: ({**r, "nbytes": r["nbytes"] - 8} if r is ids else r) for k, r in weights.items()}
    assert "out of range" in tampered(weights=short)
    samples = json.loads(json.dumps(raw.header["samples"]))
    samples[0]["outputs"][0] = {**samples[0]["outputs"][0], "dtype": "torch.int64"}
    assert "float32" in tampered(samples=samples, kind="dtype")
