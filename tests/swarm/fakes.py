"""A fake Executor at the engine's seam: a synthetic, deterministic landscape over the
softmax design space, so engine behaviour is tested in milliseconds. The real harness is
exercised by tests/swarm/test_swarm_command.py."""
from swarm.types import Result

FACTORS = {
    "VEC": {1: 0.4, 8: 2.4, 16: 3.0},
    "THREADS": {1: 1.0, 2: 1.8, 4: 1.6, 8: 1.3},
    "ALGO": {"two_pass": 1.1, "online": 1.0, "staged": 1.2},
    "FAST_EXP": {0: 0.8, 1: 1.0},
    "CHUNK": {1: 1.0, 4: 1.05, 16: 1.02, 64: 0.9},
}


def landscape(params: dict) -> Result:
    if params.get("VEC") == 16 and params.get("CHUNK") == 64:
        return Result(status="wrong", reason="synthetic: VEC=16 with CHUNK=64 is wrong")
    if params.get("THREADS") == 8 and params.get("ALGO") == "online":
        return Result(status="crashed", reason="synthetic crash")
    score = 1.0
    for k, table in FACTORS.items():
        score *= table.get(params.get(k), 1.0)
    return Result(status="ok", reason="synthetic", score=score, median_ms=10.0 / score,
                  speedup={"torch": score, "numpy": score * 6})


class FakeExecutor:
    def __init__(self, fail_after: int | None = None):
        self.evaluated: list[int] = []
        self.fail_after = fail_after

    def evaluate(self, goal, candidates):
        for c in candidates:
            if self.fail_after is not None and len(self.evaluated) >= self.fail_after:
                raise KeyboardInterrupt("simulated crash of the process running the run")
            self.evaluated.append(c.id)
            yield c.id, landscape(c.params), None


class NoisyExecutor(FakeExecutor):
    """The synthetic landscape measured on a noisy host: a candidate's first measurement is
    up to 1.6x optimistic (a deterministic draw per parameter set); re-measurements are true."""

    def __init__(self):
        super().__init__()
        self.remeasured: list[tuple[int, int]] = []   # (candidate id, round)

    @staticmethod
    def luck(params: dict) -> float:
        import hashlib
        import json
        h = int(hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:8], 16)
        return 1.0 + 0.6 * (h % 1000) / 1000

    def evaluate(self, goal, candidates):
        for c in candidates:
            self.evaluated.append(c.id)
            r = landscape(c.params)
            if r.ok:
                r.score *= self.luck(c.params)
            yield c.id, r, None

    def remeasure(self, goal, candidates, round):
        for c in candidates:
            self.remeasured.append((c.id, round))
            yield c.id, landscape(c.params)
