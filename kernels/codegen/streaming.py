"""How many weight rows a matrix-vector pass should sum on this host, measured once per host.

A decode step streams its weights through matrix-vector products (matmul ALGO 2, the "dot"
form): each pass over the activation row sums ``GR`` weight rows. Which ``GR`` streams fastest
depends on the host, and by more than the search can see in a whole engine's noise
(docs/engine.md: one row at a time was fastest on a Zen 5 VM, eight on Zen 3 and Zen 4 VMs,
and each was slower elsewhere). So the knob's default is this host's: the probe compiles the
generator's own pass (``matmul.GEMV_DOT``) at every ``GR``, times each over weights four times
the last-level cache (at least 128 MiB), and keeps the fastest where it beats the old default
of four rows by more than the probe's noise. The result is kept per host fingerprint and
probe source, first writer wins (:mod:`kernels.codegen.hostprobe`), so every process of one
host generates the same defaults.
"""
from __future__ import annotations

import functools
import json
import os
import subprocess
import tempfile
from pathlib import Path

from kernels.codegen import hostprobe

ROWS = (1, 2, 4, 8)           # the values of the GR knob
DEFAULT = 4                   # without a measurement (and unless another value beats it)
MARGIN = 0.03                 # another value must be this much faster than DEFAULT to replace it
N, K = 2816, 1024             # one weight: a Linear's [out, in], 11.5 MB
FLAGS = ("-std=gnu11", "-O3", "-march=native", "-fopenmp")   # the generated code's (targets/cpu.py)

HEAD = "#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <time.h>\n"
MAIN = r"""
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
typedef void (*pass_fn)(const float *, const float *, float *);
int main(int argc, char **argv) {
    const int64_t L = atoll(argv[1]);
    float *w = aligned_alloc(64, (size_t)L * %(N)d * %(K)d * 4), *x = aligned_alloc(64, %(K)d * 4);
    float *y = aligned_alloc(64, %(N)d * 4);
    if (!w || !x || !y) return 2;
    for (int64_t i = 0; i < L * %(N)d * %(K)d; i++) w[i] = (float)(i %% 7) * 0.1f;
    for (int i = 0; i < %(K)d; i++) x[i] = 1.0f;
    pass_fn fns[] = {%(FNS)s};
    double best[%(COUNT)d];
    for (int v = 0; v < %(COUNT)d; v++) best[v] = 1e30;
    for (int round = 0; round < 5; round++)
        for (int v = 0; v < %(COUNT)d; v++)
            for (int rep = 0; rep < 3; rep++) {
                double t0 = now();
                for (int64_t l = 0; l < L; l++) fns[v](x, w + (size_t)l * %(N)d * %(K)d, y);
                double t = now() - t0;
                if (t < best[v]) best[v] = t;
            }
    printf("{");
    for (int v = 0; v < %(COUNT)d; v++) printf("%%s\"%%d\": %%.9f", v ? ", " : "", (int[]){%(ROWS)s}[v], best[v]);
    printf(", \"check\": %%f}\n", (double)y[0]);
    return 0;
}
"""


def probe_source(threads: int) -> str:
    """One function per GR value, each the generator's pass at that value, and a timing main."""
    from kernels.codegen.matmul import GEMV_DOT
    fns = []
    for gr in ROWS:
        inner = GEMV_DOT.format(P=f"R{gr}_", CSB=K, CSA=1, K=K)
        fns.append(f"#define R{gr}_GR {gr}\n"
                   f"static void pass{gr}(const float *restrict a, const float *restrict b, float *restrict c) {{\n"
                   f"    #pragma omp parallel for num_threads({threads}) schedule(static)\n"
                   f"    for (int64_t jc = 0; jc < {N}; jc += 64) {{\n"
                   f"        const int64_t nc = {N} - jc < 64 ? {N} - jc : 64;\n"
                   f"        const float *ai = a;\n"
                   f"        float *ci = c + jc;\n"
                   f"{inner}\n"
                   f"    }}\n}}\n")
    main = MAIN % {"N": N, "K": K, "COUNT": len(ROWS), "FNS": ", ".join(f"pass{g}" for g in ROWS),
                   "ROWS": ", ".join(str(g) for g in ROWS)}
    return HEAD + "\n".join(fns) + main


def choose(seconds: dict) -> int:
    """The fastest GR, where it beats DEFAULT by more than MARGIN; else DEFAULT."""
    best = min(ROWS, key=lambda g: seconds[g])
    return best if seconds[best] < seconds[DEFAULT] * (1 - MARGIN) else DEFAULT


def measure(threads: int, llc_bytes: int = 0, cc: str = "gcc", quiet: float | None = hostprobe.QUIET) -> dict:
    """Compile and run the probe: seconds per sweep for each GR (the best of fifteen, interleaved).
    HostBusy where other programs ran beside it (``quiet``: :func:`hostprobe.run_quiet`)."""
    weights = max(128 << 20, 4 * llc_bytes)
    count = max(1, min(96, -(-weights // (N * K * 4))))
    with tempfile.TemporaryDirectory(prefix="int21-rows-") as tmp:
        src, exe = Path(tmp) / "rows.c", Path(tmp) / "rows"
        src.write_text(probe_source(threads))
        subprocess.run([cc, *FLAGS, "-o", str(exe), str(src)], check=True, capture_output=True, timeout=120)
        out = hostprobe.run_quiet([str(exe), str(count)], quiet, timeout=120)
    got = json.loads(out)
    return {g: float(got[str(g)]) for g in ROWS} | {"matrices": count}


def host_record(again: bool = False) -> dict:
    """This host's record: ``rows`` and what they were chosen from (``seconds`` per GR over
    ``matrices`` weights), ``measured`` and the record's ``path``; DEFAULT with ``measured``
    false where the probe cannot run. ``again`` measures anew."""
    from kernels.targets.cpu import cpu_fingerprint
    threads = os.cpu_count() or 1

    def record() -> dict:
        seconds = measure(threads, int(cpu_fingerprint().get("llc_bytes") or 0))
        return {"rows": choose(seconds), "seconds": {str(g): seconds[g] for g in ROWS},
                "matrices": seconds["matrices"], "threads": threads}

    return hostprobe.choice("rows-per-pass", probe_source(threads), record, "rows", ROWS, {"rows": DEFAULT},
                            again=again)


@functools.lru_cache(maxsize=1)
def host_rows_per_pass() -> int:
    """This host's GR default (measured once per fingerprint and probe, then read back);
    DEFAULT where the probe cannot run."""
    return host_record()["rows"]
