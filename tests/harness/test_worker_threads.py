"""A worker evaluates in a thread of a process whose main thread did other sandboxed work
first (the web process with its embedded workers: an import on the Import page, then a run).
Run in a fresh interpreter, where the descriptor numbers are what such a process has."""
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import threading
from kernels import workloads
from kernels.graph.capture_server import Client
from kernels.harness.evaluator import EvalSettings, Evaluator
Client.for_this_thread()          # the capture server, started by the main thread
wl = workloads.get("softmax")
src, params = wl.template("cpu").seeds()[0]
got = {}
t = threading.Thread(target=lambda: got.update(out=Evaluator(EvalSettings(timing=False, seeds=2)).evaluate(
    src, params, wl, "cpu")))
t.start()
t.join()
print(got["out"].status, got["out"].reason)
"""


def test_a_worker_thread_evaluates_after_the_main_thread_started_the_capture_server():
    r = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.startswith("ok "), r.stdout


HANG = """
from kernels import workloads
from kernels.harness.evaluator import EvalSettings, Evaluator
wl = workloads.get("softmax")
src = '''#include <stdint.h>
void kernel(const float *x, float *y, int64_t rows, int64_t cols) { for (;;) { } }
'''
print("go", flush=True)
Evaluator(EvalSettings(timing=False, seeds=2, run_timeout=120)).evaluate(src, {}, wl, "cpu")
"""


def _runners_of(pid: int) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == pid and stat.split("(", 1)[1].startswith("kernel-"):
                found.append(int(name))
    return found


def _cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_a_runner_dies_with_its_evaluator_even_a_hanging_one():
    """A worker killed with SIGKILL (the OOM killer, kill -9) leaves no candidate running."""
    p = subprocess.Popen([sys.executable, "-c", HANG], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    runners = []
    while time.monotonic() < deadline and not runners:
        time.sleep(0.2)
        runners = _runners_of(p.pid)
    assert runners, "the evaluation never started its runner"
    while time.monotonic() < deadline and _cpu_seconds(runners[0]) < 0.5:   # inside the endless call
        time.sleep(0.1)
    p.kill()
    p.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(Path(f"/proc/{r}").exists() and
                                              "Z" not in Path(f"/proc/{r}/stat").read_text().split(")")[1][:3]
                                              for r in runners):
        time.sleep(0.1)
    alive = [r for r in runners if Path(f"/proc/{r}").exists() and
             "Z" not in Path(f"/proc/{r}/stat").read_text().split(")")[1][:3]]
    assert not alive, f"runners outlived their evaluator: {alive}"
