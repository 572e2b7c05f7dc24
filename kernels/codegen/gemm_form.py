"""Which form a deep Linear's GEMM starts in on this host, measured once per host.

A Linear's product ``x @ w.T`` with enough rows and depth has two generated forms (matmul's
``G<id>_ALGO``): 1, packed (both operands repacked into register-blocked panels, a GEMM in the
BLAS manner), and 3, dot tiles (rows of ``x`` and of ``w`` are both contiguous in k already:
nothing is packed, each tile sums MR3 x NR3 dot products). Which is faster depends on the host
by more than the engine search can see in its noise (docs/engine.md): the dot tiles ran the
Linear alone 2x faster on a Xeon VM; packed ran the issue's prefill 12-16% faster on a Zen 4
VM, both with AVX-512; on AVX2's 16 registers the dot tiles' default tile spills. So a deep
Linear's default form is this host's faster one: the probe generates both forms of the
prefill's two deepest Linear shapes through the generator itself, builds them with the
harness's flags, checks each against NumPy and times them interleaved in a child process, under
the harness's OpenMP policy. The rule it replaces (dot tiles with 32 vector registers, else
packed) is the incumbent: the other form must beat it by more than MARGIN. The choice is kept
per host, and only from a quiet host (:mod:`hostprobe`).

Run as ``python -m kernels.codegen.gemm_form`` it is that child: a JSON spec on stdin, a JSON
record on stdout. The code it runs is the generator's, for graphs built here, never a user's.
"""
from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from kernels.codegen import hostprobe

FORMS = (1, 3)                # packed, dot tiles (matmul's ALGO values)
SHAPES = ((128, 2816, 1024), (128, 1024, 2816))   # (m, n, k): the prefill, FFN up and down
MARGIN = 0.03                 # the other form must be this much faster than the incumbent
ROUNDS, REPS = 10, 3          # rounds interleave the forms: a busy spell on a shared host hits both
TOLERANCE = 1e-3              # a form whose product is further from NumPy's is never chosen
# Timed as the harness times every candidate and engine: idle OpenMP threads sleep
# (kernels/harness/sandbox.py says why). The packed form's barriers then cost a wake-up each,
# which is much of what separates the two forms on some hosts (docs/engine.md).
CHILD_ENV = {"OMP_WAIT_POLICY": "PASSIVE"}


def rule(vregs: int) -> int:
    """The form a host with ``vregs`` vector registers starts in without a measurement: dot
    tiles with AVX-512's 32 (their default 4 x 6 tile holds 30), else packed."""
    return 3 if vregs >= 32 else 1


def linear(m: int, n: int, k: int):
    """The graph of ``x @ w.T`` with ``x`` [m, k] and an nn.Linear weight ``w`` [n, k]."""
    from kernels.graph.ir import Graph, Node, Tensor
    g = Graph((Tensor("x", (m, k), "input"),), (Tensor("w", (n, k), "param"),),
              (Node("wt", "permute", ("w",), (k, n), {"perm": [1, 0]}),
               Node("mm", "matmul", ("x", "wt"), (m, n))), ("mm",))
    g.validate()
    return g


def sources(threads: int) -> dict:
    """{(m, n, k, form): the generated program's source}, each form its own default."""
    from kernels.codegen import program
    from kernels.codegen.streaming import DEFAULT
    out = {}
    for m, n, k in SHAPES:
        for form in FORMS:
            prog = program.generate(linear(m, n, k), cores=threads, gemm_form=form, gemv_rows=DEFAULT)
            algo = next((p for p in prog.params if p.name.endswith("_ALGO")), None)
            if algo is None or algo.default != form:
                raise ValueError(f"the generator did not start {m}x{n}x{k} in form {form}")
            out[(m, n, k, form)] = prog.source
    return out


def probe_text(threads: int) -> str:
    """What the record is keyed by: every source the probe builds, and the child's own code."""
    return "".join(sources(threads).values()) + Path(__file__).read_text()


def choose(seconds: dict, incumbent: int) -> int:
    """The incumbent form, unless the other is faster by more than MARGIN."""
    other = next(f for f in FORMS if f != incumbent)
    return other if seconds[other] < seconds[incumbent] * (1 - MARGIN) else incumbent


def measure(threads: int, quiet: float | None = hostprobe.QUIET) -> dict:
    """Build both forms of every shape and time them in a child: {form: seconds for one pass
    over the shapes (the best of ROUNDS x REPS, interleaved)}, plus each form's error.
    HostBusy where other programs ran beside the child (``quiet``: :func:`hostprobe.run_quiet`)."""
    from kernels.targets.cpu import CC, SHARED_FLAGS
    with tempfile.TemporaryDirectory(prefix="int21-gemm-form-") as tmp:
        spec = []
        for (m, n, k, form), text in sources(threads).items():
            src, lib = Path(tmp) / f"f{form}_{n}x{k}.c", Path(tmp) / f"f{form}_{n}x{k}.so"
            src.write_text(text)
            subprocess.run([CC, *SHARED_FLAGS, "-o", str(lib), str(src), "-lm"], check=True, capture_output=True,
                           timeout=180)
            spec.append({"lib": str(lib), "m": m, "n": n, "k": k, "form": form})
        out = hostprobe.run_quiet([sys.executable, "-m", "kernels.codegen.gemm_form"], quiet, input=json.dumps(spec),
                                  timeout=300, cwd=Path(__file__).resolve().parents[2], env={**os.environ, **CHILD_ENV})
    got = json.loads(out)
    return {int(f): float(s) for f, s in got["seconds"].items()} | {"error": got["error"]}


WORDS = {1: "packed", 3: "dot tiles"}
NAMES = {f: f"{w} (ALGO {f})" for f, w in WORDS.items()}


def host_record(again: bool = False) -> dict:
    """This host's record: ``form`` and what it was chosen from (``seconds`` and ``error`` per
    form, the ``incumbent``), ``measured`` and the record's ``path``; where the probe cannot
    run, the registers rule's form with ``measured`` false. ``again`` measures anew."""
    from kernels.codegen.family import host_vector_registers
    from kernels.codegen.program import CodegenError
    incumbent = rule(host_vector_registers())
    threads = os.cpu_count() or 1
    unmeasured = {"form": incumbent, "incumbent": incumbent, "measured": False, "path": None,
                  "reason": "the probe's own graphs did not generate"}

    def record() -> dict:
        got = measure(threads)
        seconds = {f: got[f] if got["error"][str(f)] <= TOLERANCE else float("inf") for f in FORMS}
        return {"form": choose(seconds, incumbent), "incumbent": incumbent, "threads": threads,
                "seconds": {str(f): got[f] for f in FORMS}, "error": got["error"],
                "shapes": [list(s) for s in SHAPES]}

    try:
        text = probe_text(threads)
    except (CodegenError, ValueError):      # the probe's own graphs no longer generate: keep the rule
        return unmeasured
    return hostprobe.choice("gemm-form", text, record, "form", FORMS, unmeasured, again=again)


@functools.lru_cache(maxsize=1)
def host_gemm_form() -> int:
    """This host's default form for a deep Linear: measured once per fingerprint and probe,
    then read back; where the probe cannot run, dot tiles with 32 vector registers, else packed."""
    return host_record()["form"]


def _child() -> None:
    """Time the built forms (stdin: [{lib, m, n, k, form}]), interleaved; print the record."""
    import ctypes
    import time

    import numpy as np
    spec = json.load(sys.stdin)
    rng = np.random.default_rng(0)
    ptr = ctypes.POINTER(ctypes.c_float)
    runs = []
    for s in spec:
        fn = ctypes.CDLL(s["lib"], mode=os.RTLD_NOW | os.RTLD_LOCAL).kernel
        fn.argtypes, fn.restype = [ptr, ptr, ptr], None
        x = rng.standard_normal((s["m"], s["k"]), dtype=np.float32)
        w = rng.standard_normal((s["n"], s["k"]), dtype=np.float32) / np.float32(np.sqrt(s["k"]))
        y = np.zeros((s["m"], s["n"]), np.float32)
        args = [a.ctypes.data_as(ptr) for a in (x, w, y)]
        fn(*args)
        want = x.astype(np.float64) @ w.astype(np.float64).T
        err = float(np.max(np.abs(y - want)) / max(float(np.max(np.abs(want))), 1e-30))
        runs.append((s["form"], fn, args, err, [float("inf")]))
    for _ in range(ROUNDS):
        for form, fn, args, _, best in runs:
            for _ in range(REPS):
                t0 = time.perf_counter()
                fn(*args)
                best[0] = min(best[0], time.perf_counter() - t0)
    seconds, error = {}, {}
    for form, _, _, err, best in runs:
        seconds[str(form)] = seconds.get(str(form), 0.0) + best[0]
        error[str(form)] = max(error.get(str(form), 0.0), err)
    print(json.dumps({"seconds": seconds, "error": error}))


if __name__ == "__main__":
    _child()
