"""Choices measured once per host and kept: the first process to measure writes the record,
every other process of that host reads it back.

A generator default that depends on the host by more than a search can see in a whole
engine's noise (:mod:`kernels.codegen.streaming`, :mod:`kernels.codegen.gemm_form`) is
measured by a short probe, not assumed. The record is keyed by the host's fingerprint and the
probe's own source, so a new compiler, another CPU or a changed probe measures again; it lies
in ``INT21_CACHE_DIR`` (``var/cache`` for the app), and deleting it measures again.

A probe's timings are only kept from a quiet host: its timing child runs through
:func:`run_quiet`, which counts the CPU time other programs took while it ran (every CPU's
busy time in /proc/stat less the child's own, as the harness's calm check counts it). Above
QUIET CPUs of it, nothing is kept and the probe's rule decides for now; the next process
measures again. Measured on a 2-core VM with the test suite running beside the GEMM-form
probe: packed read 4.6% faster than the dot tiles, which are 18-19% faster on the quiet host.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Callable

QUIET = 0.25       # CPUs' worth of other programs' time per wall second beside a probe, at most


class HostBusy(ValueError):
    """Other programs ran beside a probe's timing child: its timings are not kept."""


PROBE_ERRORS = (OSError, subprocess.SubprocessError, ValueError, KeyError)
LAST_ERROR: dict[str, str] = {}      # kind -> why its last measurement was not kept (engine host shows it)


def run_quiet(argv: list, quiet: float | None = QUIET, **kw) -> str:
    """Run a probe's timing child (``subprocess.run`` keywords in ``kw``) and return its
    stdout; HostBusy where other programs took more than ``quiet`` CPUs per wall second
    while it ran (None: not checked)."""
    from kernels.harness.calm import host_sample, others_between
    before = host_sample(children=True)
    done = subprocess.run(argv, check=True, capture_output=True, text=True, **kw)
    others = others_between(before, host_sample(children=True))
    if quiet is not None and others is not None and others > quiet:
        raise HostBusy(f"other programs took {others:.2f} CPUs beside the probe, more than the {quiet} "
                       "its timings may share the host with")
    return done.stdout


def record_path(kind: str, probe: str) -> Path:
    """Where the record of ``kind`` for this host and ``probe`` (the probe's source text) lies."""
    from kernels.targets.base import cache_dir
    from kernels.targets.cpu import cpu_fingerprint
    digest = hashlib.sha256(probe.encode()).hexdigest()
    key = hashlib.sha256((json.dumps(cpu_fingerprint(), sort_keys=True) + digest).encode()).hexdigest()[:16]
    return cache_dir() / f"{kind}-{key}.json"


def once(kind: str, probe: str, measure: Callable[[], dict], again: bool = False) -> dict | None:
    """The record of ``kind`` for this host and ``probe`` (the probe's source text):
    read back when one exists, else ``measure()``'s, written unless another process wrote
    first (then that one is returned). None where the probe cannot run; nothing is kept then,
    so the next process tries again. ``again`` measures anew and replaces the record; where
    that measurement cannot be kept, the earlier record stands (LAST_ERROR says why)."""
    path = record_path(kind, probe)
    key = path.stem.rsplit("-", 1)[1]
    try:
        old = json.loads(path.read_text())
    except (OSError, ValueError):
        old = None
    if old is not None and not again:
        return old
    try:
        record = {**measure(), "fingerprint_key": key}
    except PROBE_ERRORS as exc:
        LAST_ERROR[kind] = str(exc) or type(exc).__name__
        return old
    LAST_ERROR.pop(kind, None)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(record))
        if again:
            os.replace(tmp, path)     # asked for: the new measurement replaces the record
            return record
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


def choice(kind: str, probe: str, measure: Callable[[], dict], field: str, allowed, fallback: dict,
           again: bool = False) -> dict:
    """The record of ``kind`` (:func:`once`) where its ``field`` is one of ``allowed``, with
    ``measured`` true and its ``path``; else ``fallback`` with ``measured`` false and the
    ``reason`` (the probe could not run, the host was busy, or the record was malformed)."""
    got = once(kind, probe, measure, again=again)
    try:
        value = int(got[field]) if got else None
    except (KeyError, TypeError, ValueError):
        value = None
    if value not in allowed:
        return {**fallback, "measured": False, "path": None,
                "reason": LAST_ERROR.get(kind, "its record was malformed")}
    out = {**got, field: value, "measured": True, "path": str(record_path(kind, probe))}
    if again and kind in LAST_ERROR:
        out["not_kept"] = LAST_ERROR[kind]     # measuring again failed: this is the earlier record
    return out
