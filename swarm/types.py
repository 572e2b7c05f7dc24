"""Goals, candidates and results: the data the swarm moves around (JSON-friendly)."""
from __future__ import annotations

import hashlib
import json
import re
import statistics
from dataclasses import asdict, dataclass, field


@dataclass
class Budget:
    """When a run stops. ``None`` means no limit of that kind."""

    evaluations: int = 200
    wall_seconds: float | None = None
    target_speedup: float | None = None
    stagnation_generations: int | None = 10


@dataclass
class Goal:
    """What the engineer asked for. ``shapes``: the shapes that count (the first is timed);
    ``metric``: "speedup" (vs the strongest baseline measured alongside) or "time"."""

    workload: str
    target: str = "cpu"
    shapes: list[str] = field(default_factory=list)       # e.g. ["4096x4096"]; empty: typical
    metric: str = "speedup"
    budget: Budget = field(default_factory=Budget)
    team: list[str] = field(default_factory=lambda: ["explorer", "mutator", "crossover", "tuner",
                                                     "variant", "seeded"])
    population: int = 8                                    # candidates per generation
    seed: int = 0
    cold: bool = False                                     # ignore lessons of earlier runs
    pins: dict = field(default_factory=dict)               # param -> value fixed by the engineer
    eval_settings: dict = field(default_factory=dict)      # passed to EvalSettings (timeouts…)
    llm: dict = field(default_factory=dict)                # model choice (swarm.llm.config); never a key
    held_out: list[str] = field(default_factory=list)      # checked for correctness, never searched on
    tolerance: dict | None = None                          # overrides the workload's: atol/rtol/rel_rmse
    space: dict | None = None                              # the engineer's design space (swarm.space)
    confirm_top: int = 3                                   # best few re-measured before the run ends

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "Goal":
        data = dict(data)
        data["budget"] = Budget(**data.get("budget", {}))
        return cls(**data)


@dataclass
class CandidateDraft:
    """A proposal: what to evaluate, who proposed it and why (one line)."""

    params: dict
    agent: str
    rationale: str
    source: str | None = None          # None: the design-space template of the variant
    parents: list[int] = field(default_factory=list)
    meta: dict = field(default_factory=dict)   # JSON: e.g. the LLM exchange that wrote the source


def normalise_source(source: str) -> str:
    """Comments and whitespace do not make a different kernel."""
    s = re.sub(r"/\*.*?\*/", " ", source, flags=re.S)
    s = re.sub(r"//[^\n]*", " ", s)
    return " ".join(s.split())


def candidate_key(source: str, params: dict) -> str:
    blob = normalise_source(source) + "\0" + json.dumps(params, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


@dataclass
class Result:
    """The part of an evaluation the swarm reasons with (the full outcome is stored apart)."""

    status: str
    reason: str
    score: float = 0.0                 # higher is better; 0 for anything not ok
    median_ms: float | None = None
    speedup: dict = field(default_factory=dict)
    stages: list = field(default_factory=list)   # [{name, status, seconds}]
    cached: bool = False
    # Every score measured for the candidate, once it was confirmed (re-measured in fresh
    # evaluations); ``score`` is then their median. Empty: measured once.
    measurements: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def confirmed(self, measurements: list[float], speedups: list[dict] | None = None) -> "Result":
        """This result once re-measured: every measurement kept, scored by their median;
        ``speedups`` (one dict per measurement, the first this result's own): each baseline's
        speedup becomes its median too, so every page shows the one confirmed number."""
        speedup = dict(self.speedup)
        if speedups:
            speedup = {b: statistics.median(s.get(b, 0.0) for s in speedups) for b in self.speedup}
        return Result(**{**asdict(self), "measurements": list(measurements), "speedup": speedup,
                         "score": statistics.median(measurements)})

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_outcome(cls, outcome, metric: str = "speedup") -> "Result":
        score = 0.0
        if outcome.status == "ok":
            if metric == "time" and outcome.median_ms:
                score = 1.0 / outcome.median_ms
            elif outcome.speedup:
                score = min(outcome.speedup.values())   # vs the strongest baseline measured
        return cls(status=outcome.status, reason=outcome.reason, score=score, median_ms=outcome.median_ms,
                   speedup=dict(outcome.speedup),
                   stages=[{"name": s.name, "status": s.status, "seconds": round(s.seconds, 3)}
                           for s in outcome.stages])


@dataclass
class Candidate:
    id: int
    run_id: int
    generation: int
    key: str
    params: dict
    agent: str
    rationale: str
    source: str
    parents: list[int] = field(default_factory=list)
    result: Result | None = None
    meta: dict = field(default_factory=dict)

    @property
    def score(self) -> float:
        return self.result.score if self.result else 0.0


@dataclass
class Lesson:
    """A piece of knowledge with its evidence (candidate ids)."""

    kind: str                 # best_config | param_effect | failure_pattern | guidance | rejection | note
    workload: str
    target: str
    fingerprint: str          # target fingerprint key; "" = any host
    shape_bucket: str         # e.g. "2^12x2^12"; "" = any shape
    text: str
    data: dict = field(default_factory=dict)
    evidence: list[int] = field(default_factory=list)
    id: int | None = None
    run_id: int | None = None

    def to_json(self) -> dict:
        return asdict(self)
