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


def test_sandbox_children_get_a_cupy_cache_they_can_write_after_dropping_to_nobody(monkeypatch):
    """Without it, CuPy caches under root's home and every CUDA child failed its set-up
    ("Permission denied"), as seen on the H200 host."""
    import os
    import stat
    from kernels.harness import sandbox
    monkeypatch.delenv("CUPY_CACHE_DIR", raising=False)
    path = sandbox.minimal_env()["CUPY_CACHE_DIR"]
    mode = os.stat(path).st_mode
    assert stat.S_ISDIR(mode) and mode & stat.S_ISVTX and mode & 0o777 == 0o777
    monkeypatch.setenv("CUPY_CACHE_DIR", "/srv/cupy")
    assert sandbox.minimal_env()["CUPY_CACHE_DIR"] == "/srv/cupy"


def test_children_run_openmp_passive_unless_a_benchmark_asks_for_the_deployed_default(monkeypatch):
    """Passive by default (an idle pool must not bill the next candidate); `bench engine
    --omp-wait default` leaves it out for every child alike, as a serving process runs."""
    from kernels.harness import sandbox
    assert sandbox.minimal_env()["OMP_WAIT_POLICY"] == "PASSIVE"
    monkeypatch.setattr(sandbox, "OMP_WAIT_POLICY", None)
    assert "OMP_WAIT_POLICY" not in sandbox.minimal_env()


def test_the_processes_of_several_box_users_are_found_in_one_walk_of_proc():
    import os
    import subprocess

    from kernels.harness.box import UID_BASE, pids_of_users
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        unused = UID_BASE - 1   # below every box user's id: nobody runs as it
        assert pids_of_users({unused}) == []
        mine = pids_of_users({unused, os.getuid()})
        assert os.getpid() in mine and child.pid in mine
        assert pids_of_users(set()) == []
    finally:
        child.kill()
        child.wait()
    assert child.pid not in pids_of_users({os.getuid()})
