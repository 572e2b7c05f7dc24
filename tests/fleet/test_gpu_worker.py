"""A worker for target.cuda refuses to start where CuPy sees no GPU, and runs one evaluation
at a time on the one GPU it is pinned to where it does (the end-to-end GPU path is bench/gpu_worker_check.sh, on a GPU host)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from int21web.fleet import worker
from kernels import targets

ROOT = Path(__file__).resolve().parents[2]


def test_a_cuda_worker_refuses_to_start_on_a_host_without_a_gpu(tmp_path):
    if targets.get("cuda").can_run()[0]:
        pytest.skip("this host has a GPU")
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update(CELERY_BROKER_URL="memory://", INT21_VAR_DIR=str(tmp_path))
    r = subprocess.run([str(Path(sys.executable).with_name("celery")), "-A", "int21web", "worker", "-Q", "target.cuda"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == worker.EX_CONFIG, r.stdout[-2000:] + r.stderr[-2000:]
    assert "refuses to start: this worker serves target.cuda, but no CUDA GPU on this host" in r.stderr
    assert "this host can serve target.cpu" in r.stderr


class FakeCuda:
    def __init__(self, ok):
        self.ok = ok

    def can_run(self):
        return (True, "") if self.ok else (False, "no CUDA GPU on this host (the CUDA runtime sees no device)")


def with_gpus(monkeypatch, count):
    monkeypatch.setattr(targets, "get", lambda name: FakeCuda(count > 0))
    import kernels.targets.cuda as cuda
    monkeypatch.setattr(cuda, "_gpu_info", lambda: ({"gpu_count": count}, "") if count else (None, "none"))


def test_a_cuda_worker_runs_one_evaluation_at_a_time_on_one_gpu(monkeypatch):
    with_gpus(monkeypatch, 1)
    assert worker.gpu_concurrency(["target.cuda"], None) == 1
    assert worker.gpu_concurrency(["target.cuda"], 1) == 1
    with pytest.raises(worker.Refusal, match="one evaluation per GPU, so a CUDA worker runs with -c 1, not -c 4"):
        worker.gpu_concurrency(["target.cuda"], 4)


def test_on_a_host_of_several_gpus_each_worker_is_pinned_to_one(monkeypatch):
    with_gpus(monkeypatch, 8)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    with pytest.raises(worker.Refusal, match="CuPy sees 8 GPUs .* CUDA_VISIBLE_DEVICES=i"):
        worker.gpu_concurrency(["target.cuda"], None)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    assert worker.gpu_concurrency(["target.cuda"], None) == 1


def test_cpu_and_orchestrate_workers_are_not_held_to_gpus(monkeypatch):
    with_gpus(monkeypatch, 0)
    assert worker.gpu_concurrency(["target.cpu"], 8) is None
    assert worker.gpu_concurrency(["orchestrate"], None) is None
    with pytest.raises(worker.Refusal, match="no CUDA GPU"):
        worker.gpu_concurrency(["target.cpu", "target.cuda"], None)
