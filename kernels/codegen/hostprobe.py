"""Choices measured once per host and kept: the first process to measure writes the record,
every other process of that host reads it back.

A generator default that depends on the host by more than a search can see in a whole
engine's noise (:mod:`kernels.codegen.streaming`, :mod:`kernels.codegen.gemm_form`) is
measured by a short probe, not assumed. The record is keyed by the host's fingerprint and the
probe's own source, so a new compiler, another CPU or a changed probe measures again; it lies
in ``INT21_CACHE_DIR`` (``var/cache`` for the app), and deleting it measures again.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
from typing import Callable

PROBE_ERRORS = (OSError, subprocess.SubprocessError, ValueError, KeyError)


def once(kind: str, probe: str, measure: Callable[[], dict]) -> dict | None:
    """The record of ``kind`` for this host and ``probe`` (the probe's source text):
    read back when one exists, else ``measure()``'s, written unless another process wrote
    first (then that one is returned). None where the probe cannot run; nothing is kept then,
    so the next process tries again."""
    from kernels.targets.base import cache_dir
    from kernels.targets.cpu import cpu_fingerprint
    digest = hashlib.sha256(probe.encode()).hexdigest()
    key = hashlib.sha256((json.dumps(cpu_fingerprint(), sort_keys=True) + digest).encode()).hexdigest()[:16]
    path = cache_dir() / f"{kind}-{key}.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        pass
    try:
        record = {**measure(), "fingerprint_key": key}
    except PROBE_ERRORS:
        return None
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(record))
        os.link(tmp, path)            # the first process to measure decides for every other
    except FileExistsError:
        pass
    except OSError:
        return record
    finally:
        tmp.unlink(missing_ok=True)
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return record
