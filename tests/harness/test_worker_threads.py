"""A worker evaluates in a thread of a process whose main thread did other sandboxed work
first (the web process with its embedded workers: an import on the Import page, then a run).
Run in a fresh interpreter, where the descriptor numbers are what such a process has."""
import subprocess
import sys
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
