"""The GPU section through fakes (this host has no GPU): it says why when the CUDA target
cannot run, and on a GPU host it reports each workload's best CUDA kernel against the
CUDA baselines in the report's GPU table."""
from bench import gpu
from kernels.harness.outcome import EvalOutcome


class FakeCudaTarget:
    def __init__(self, runs: bool):
        self.runs = runs

    def available(self):
        return True, ""

    def can_run(self):
        return (True, "") if self.runs else (False, "no CUDA GPU on this host (fake)")

    def fingerprint(self):
        return {"target": "cuda", "gpu": "Fake H200"}


class FakeEvaluator:
    """Every CUDA candidate is correct; BLOCK=256 is the fastest."""

    def __init__(self, settings):
        self.settings = settings

    def evaluate(self, source, params, wl, target):
        assert target == "cuda"
        ms = 1.0 if params.get("BLOCK") == 256 else 2.0
        return EvalOutcome(status="ok", reason="fake", timings={"candidate": {"median_ms": ms}},
                           speedup={"cupy": 1.5 / ms, "torch_cuda": 1.2 / ms})


def test_it_says_why_when_the_cuda_target_cannot_run(monkeypatch):
    monkeypatch.setattr(gpu.ktargets, "get", lambda name: FakeCudaTarget(runs=False))
    section = gpu.section(quick=True, workload_names=["softmax"])
    assert section == {"ran": False, "why": "skipped: no CUDA GPU on this host (fake)"}


def test_on_a_gpu_host_it_reports_the_best_cuda_kernel_against_cupy_and_torch(monkeypatch):
    monkeypatch.setattr(gpu.ktargets, "get", lambda name: FakeCudaTarget(runs=True))
    monkeypatch.setattr(gpu, "Evaluator", FakeEvaluator)
    section = gpu.section(quick=True, workload_names=["softmax", "rmsnorm"])
    assert section["ran"] and set(section["workloads"]) == {"softmax", "rmsnorm"}
    best = section["workloads"]["softmax"]["best"]
    assert best["params"]["BLOCK"] == 256 and set(best["speedup"]) == {"cupy", "torch_cuda"}
    table = "\n".join(gpu.gpu_lines(section))
    assert "| softmax |" in table and "cupy 1.50x" in table


def test_without_a_cuda_baseline_the_fastest_correct_kernel_is_the_best():
    from bench.gpu import pick_best
    rows = [{"status": "ok", "score": 0.0, "median_ms": 3.06}, {"status": "ok", "score": 0.0, "median_ms": 1.18},
            {"status": "wrong", "score": 0.0, "median_ms": None}]
    assert pick_best(rows)["median_ms"] == 1.18
    with_baselines = [{"status": "ok", "score": 1.5, "median_ms": 2.0}, {"status": "ok", "score": 2.0, "median_ms": 3.0}]
    assert pick_best(with_baselines)["score"] == 2.0
