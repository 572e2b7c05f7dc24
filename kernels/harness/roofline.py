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


def measure_cpu(cc: str = "gcc") -> dict:
    with tempfile.TemporaryDirectory(prefix="int21-roof-") as tmp:
        exe = Path(tmp) / "roofline"
        subprocess.run([cc, "-O3", "-march=native", "-fopenmp", "-o", str(exe), str(HERE / "roofline.c")],
                       check=True, capture_output=True, timeout=120)
        out = subprocess.run([str(exe)], check=True, capture_output=True, text=True, timeout=300).stdout
    return json.loads(out)


def cpu_ceilings(fingerprint: dict, refresh: bool = False) -> dict:
    key = hashlib.sha256(json.dumps(fingerprint, sort_keys=True).encode()).hexdigest()[:16]
    path = cache_dir() / f"ceilings-cpu-{key}.json"
    if path.exists() and not refresh:
        try:
            return json.loads(path.read_text())
        except ValueError:
            pass
    data = measure_cpu()
    data["fingerprint_key"] = key
    path.write_text(json.dumps(data))
    return data
