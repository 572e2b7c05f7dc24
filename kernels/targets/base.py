"""The Target contract: what a piece of hardware must offer the evaluator."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol


@dataclass
class Artifact:
    """A compiled candidate: a file only ever loaded inside a sandbox child."""

    path: Path
    compile_seconds: float
    log: str = ""
    cached: bool = False
    resources: dict = field(default_factory=dict)  # registers, spills, shared memory, stack…


@dataclass
class CompileFailure:
    reason: str
    log: str = ""
    timed_out: bool = False
    seconds: float = 0.0
    refused: bool = False   # a forbidden construct found while compiling: rejected, not an error


@dataclass
class AuditResult:
    ok: bool
    problems: list[str] = field(default_factory=list)
    details: dict = field(default_factory=dict)


class Target(Protocol):
    """A place kernels run. Implementations MUST NOT load candidate code in-process.

    - ``available()`` returns ``(True, "")`` or ``(False, why)`` in plain words.
    - ``fingerprint()`` describes the hardware and toolchain (stable across calls).
    - ``compile(source, params, options)`` returns an ``Artifact`` or a ``CompileFailure``
      (never raises for a bad candidate); compilation runs in a limited child process.
    - ``audit(artifact, options)`` checks the binary (imported symbols, load-time code,
      resource report vs constraints) and returns an ``AuditResult``.
    - ``can_run()`` says whether candidates can execute here (a CUDA target without a GPU
      compiles and audits, and the outcome is ``compiled_only``).
    - ``natural_values(space)`` the values a person would try first on this hardware for the
      params that follow the target's template conventions (``{}`` when it has none); the
      swarm's first generation starts from them.
    """

    name: str
    language: str

    def available(self) -> tuple[bool, str]: ...
    def fingerprint(self) -> dict: ...
    def compile(self, source: str, params: dict, options: dict) -> Artifact | CompileFailure: ...
    def audit(self, artifact: Artifact, options: dict) -> AuditResult: ...
    def can_run(self) -> tuple[bool, str]: ...
    def natural_values(self, space) -> dict: ...


def param_prelude(params: dict, language: str = "c") -> str:
    """Design-space params become macros ahead of the source; ``#line 1`` keeps compiler
    messages pointing at the candidate's own lines. Variant names are not macros."""
    lines = []
    for name, value in sorted(params.items()):
        if isinstance(value, bool):
            value = int(value)
        if isinstance(value, int):
            lines.append(f"#define {name} {value}")
    lines.append('#line 1 "kernel"')
    return "\n".join(lines) + "\n"


def cache_dir() -> Path:
    import os
    root = Path(os.environ.get("INT21_CACHE_DIR", Path.home() / ".cache" / "int21"))
    root.mkdir(parents=True, exist_ok=True)
    return root
