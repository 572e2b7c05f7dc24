"""The timing child's streaming stores (``fill.c``: the poison fill, the input rotation and
the session's copy probe), built once per compiler and cached.

Trusted code: the harness's own C, compiled by the parent, loaded by the timing child
before it isolates itself and before the candidate is loaded. Where no C compiler works the
child falls back to numpy (measured cost: the write-back of the poison inside the timed
call; see fill.c) and times no copy probe.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from pathlib import Path

from kernels.targets.base import cache_dir

SOURCE = Path(__file__).with_name("fill.c")


def library(cc: str | None = None) -> str | None:
    """The path of the built helper, or None (with the child falling back) if it cannot be built."""
    from kernels.targets.cpu import CC, compiler_version
    cc = cc or CC
    key = hashlib.sha256(SOURCE.read_bytes() + compiler_version().encode()).hexdigest()[:16]
    path = cache_dir() / f"fill-{key}.so"
    if path.exists():
        return str(path)
    fd, tmp = tempfile.mkstemp(prefix="fill-", suffix=".so", dir=cache_dir())
    os.close(fd)
    try:
        subprocess.run([cc, "-O2", "-fopenmp", "-fPIC", "-shared", "-o", tmp, str(SOURCE)],
                       check=True, capture_output=True, timeout=60)
        os.chmod(tmp, 0o755)
        os.replace(tmp, path)  # atomic: concurrent evaluators build it at most twice, never half
    except (OSError, subprocess.SubprocessError):
        Path(tmp).unlink(missing_ok=True)
        return None
    return str(path)
