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

    Building:
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

    Running (the target's runner; the evaluator and its timing loop never ask which target):
    - ``prepare(artifact, workload, options)`` the runnable form of an audited artifact (the
      CPU object linked into the trusted runner; the cubin); raises ``LinkError`` for an
      artifact the toolchain refuses to make runnable.
    - ``start(runnable, inputs=, outputs=, box=, settings=, workload=, params=)`` the
      candidate's sandbox process for one phase: an object with ``ready`` (a Reply),
      ``call(tokens, perturb=, ncalls=, nargs=)`` → Reply (``seconds`` by the evaluator's
      clock, ``device_seconds`` by a device timer if the target has one), ``close()`` → Exit.
      It MUST isolate itself before the candidate's first instruction runs.
    - ``call_tokens(workload, shape, scalars, inputs=, outputs=, params=)`` one call's arguments
      (buffer offsets, dims, scalars, launch geometry).
    - ``call_problems(reply, proc, inputs=, outputs=, threads_declared=)`` what the call left
      wrong that only the runner can see, as ``[(status, sentence)]`` (empty: nothing).
    - ``ceilings(refresh=False)`` the host's physical ceilings for the sanity stage (``{}``:
      none measured); ``min_timed_calls`` a floor on timed calls for the target's timer;
      ``timer`` "wall" (the evaluator's clock, the host's cores: CPU time and the copy probe
      apply) or "device" (the process reports each call's device time).
    """

    name: str
    language: str
    min_timed_calls: int
    timer: str

    def available(self) -> tuple[bool, str]: ...
    def fingerprint(self) -> dict: ...
    def compile(self, source: str, params: dict, options: dict) -> Artifact | CompileFailure: ...
    def audit(self, artifact: Artifact, options: dict) -> AuditResult: ...
    def can_run(self) -> tuple[bool, str]: ...
    def natural_values(self, space) -> dict: ...
    def prepare(self, artifact: Artifact, workload, options: dict): ...
    def start(self, runnable, **kw): ...
    def call_tokens(self, workload, shape, scalars, **kw) -> str: ...
    def call_problems(self, reply, proc, **kw) -> list[tuple[str, str]]: ...
    def ceilings(self, refresh: bool = False) -> dict: ...


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
