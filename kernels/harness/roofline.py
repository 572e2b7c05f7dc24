"""This host's physical ceilings, measured once per fingerprint and cached.

The physics check holds every timing against them: a kernel that appears to move more
bytes per second than the memory system can, or to compute more FLOP/s than the cores
can, is not fast, it is cheating (or broken), and its result is re-checked.
"""
from __future__ import annotations

import hashlib
import json
import subprocess
import tempfile
from pathlib import Path

from kernels.targets.base import cache_dir

HERE = Path(__file__).parent
CFLAGS = ("-O3", "-march=native", "-fopenmp")
# Independent FMA chains per thread in roofline.c's fma_chains (its FLOP count assumes each
# runs one FMA per iteration: tests/harness/test_roofline.py reads the compiled loop).
CHAINS = 12
# Cached ceilings are keyed by the probe's source too: a probe that changes measures again.
PROBE_DIGEST = hashlib.sha256((HERE / "roofline.c").read_bytes()).hexdigest()[:16]
# What the probes measure; each keeps the highest value seen (a busy host only lowers them).
FIGURES = ("copy_gbs", "triad_gbs", "peak_gflops", "copy_nt_gbs")


def measure_cpu(cc: str = "gcc", extra_flags: tuple = ()) -> dict:
    with tempfile.TemporaryDirectory(prefix="int21-roof-") as tmp:
        exe = Path(tmp) / "roofline"
        subprocess.run([cc, *CFLAGS, *extra_flags, "-o", str(exe),
                        str(HERE / "roofline.c")],
                       check=True, capture_output=True, timeout=120)
        out = subprocess.run([str(exe)], check=True, capture_output=True, text=True, timeout=300).stdout
    return json.loads(out)


def measure_host(fingerprint: dict) -> dict:
    """Every probe this host supports: the 256-bit FMA probe, and on AVX-512 hosts the 512-bit
    one too (cores with 512-bit FMA pipes reach twice the 256-bit figure: a ceiling read at
    half would make an honest, fast kernel look impossible). Each figure: the higher."""
    data = measure_cpu()
    if "avx512f" in fingerprint.get("cpu_flags", []):
        wide = measure_cpu(extra_flags=("-DVEC_BYTES=64",))
        data["peak_gflops_256bit"], data["peak_gflops_512bit"] = data["peak_gflops"], wide["peak_gflops"]
        for figure in FIGURES:
            data[figure] = max(data.get(figure, 0.0), wide.get(figure, 0.0))
    return data


def cpu_ceilings(fingerprint: dict, refresh: bool = False) -> dict:
    """The host's ceilings. Measurements only ever err low (a busy host), so the cache keeps
    the highest value seen for each figure; ``refresh`` measures again and merges."""
    key = hashlib.sha256((json.dumps(fingerprint, sort_keys=True) + PROBE_DIGEST).encode()).hexdigest()[:16]
    path = cache_dir() / f"ceilings-cpu-{key}.json"
    old = {}
    if path.exists():
        try:
            old = json.loads(path.read_text())
        except ValueError:
            old = {}
        if old and not refresh:
            return old
    data = measure_host(fingerprint)
    for figure in FIGURES:
        data[figure] = max(data.get(figure, 0.0), old.get(figure, 0.0))
    data["fingerprint_key"] = key
    data["measurements"] = old.get("measurements", 0) + 1
    path.write_text(json.dumps(data))
    return data
