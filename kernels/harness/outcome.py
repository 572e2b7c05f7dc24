"""What an evaluation returns: a value, never an exception, for anything the candidate did."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

STATUSES = {
    "ok": "correct, and timed against the baselines",
    "rejected_static": "refused before compiling: a forbidden construct in the source",
    "compile_error": "did not compile (or compiling took too long)",
    "audit_failed": "compiled, but the binary uses something outside the allowlist",
    "wrong": "ran, but an output was wrong, or an input or guard region was written",
    "nondeterministic": "two runs on the same inputs gave different bits",
    "crashed": "the sandbox child died (signal, exit, memory limit)",
    "timeout": "the sandbox child ran past its wall-clock limit and was killed",
    "suspicious": "the timing is physically implausible, even when re-run in a fresh process",
    "compiled_only": "compiled and checked statically; not run (no device on this host)",
}


@dataclass
class Stage:
    """One stage of an evaluation: its verdict, how long it took, a sentence and details."""

    name: str
    status: str  # "passed" | "failed" | "skipped"
    seconds: float = 0.0
    summary: str = ""
    details: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class EvalOutcome:
    status: str
    reason: str
    stages: list[Stage] = field(default_factory=list)
    timings: dict = field(default_factory=dict)       # impl → {median_ms, iqr_ms, min_ms, n}
    speedup: dict = field(default_factory=dict)       # baseline → ratio of medians
    resources: dict = field(default_factory=dict)
    fingerprint: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"unknown status {self.status!r}")

    @property
    def correct(self) -> bool:
        return self.status in ("ok", "suspicious")

    @property
    def median_ms(self) -> float | None:
        cand = self.timings.get("candidate")
        return cand["median_ms"] if cand else None

    def stage(self, name: str) -> Stage | None:
        return next((s for s in self.stages if s.name == name), None)

    def to_json(self) -> dict:
        return {
            "status": self.status,
            "reason": self.reason,
            "correct": self.correct,
            "median_ms": self.median_ms,
            "speedup": self.speedup,
            "timings": self.timings,
            "stages": [s.to_json() for s in self.stages],
            "resources": self.resources,
            "fingerprint": self.fingerprint,
            "notes": self.notes,
        }
