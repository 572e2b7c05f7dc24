"""The sandbox's own guarantees, with trusted children that misbehave on purpose."""
import sys
import time

from kernels.harness.sandbox import OUTPUT_CAP, Limits, run_process


def py(code, tmp_path, **limits):
    return run_process([sys.executable, "-c", code], cwd=tmp_path, limits=Limits(**limits))


def test_a_chatty_child_is_drained_and_capped_not_deadlocked(tmp_path):
    code = "import os\nfor _ in range(2000): os.write(1, b'x' * 65536); os.write(2, b'y' * 65536)"
    result = py(code, tmp_path, wall_seconds=60)
    assert result.returncode == 0 and not result.timed_out
    assert len(result.stdout) == OUTPUT_CAP and result.stdout_truncated
    assert len(result.stderr) == OUTPUT_CAP and result.stderr_truncated


def test_the_watchdog_kills_the_whole_process_group(tmp_path):
    code = ("import subprocess, time\n"
            "subprocess.Popen(['sleep', '300'])\n"
            "time.sleep(300)")
    start = time.monotonic()
    result = py(code, tmp_path, wall_seconds=1.5)
    assert result.timed_out and time.monotonic() - start < 20
    assert "wall-clock limit" in result.describe_exit()


def test_a_signal_is_a_result(tmp_path):
    result = py("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)", tmp_path, wall_seconds=30)
    assert result.signal == 11 and "SIGSEGV" in result.describe_exit()


def test_the_child_gets_a_minimal_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("INT21_SECRET", "hunter2")
    result = py("import os; print(sorted(os.environ))", tmp_path, wall_seconds=30)
    assert "INT21_SECRET" not in result.stdout and "OPENBLAS_CORETYPE" not in result.stdout
