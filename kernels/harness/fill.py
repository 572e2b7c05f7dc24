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


class Streams:
    """The helper's streaming stores, bound through ctypes: fill and copy without leaving
    dirty lines in the cache (trusted code: loaded by the evaluator and the copy probe)."""

    def __init__(self, lib):
        import ctypes
        self.fill_nt, self.copy_nt = lib.i21_fill_nt, lib.i21_copy_nt
        self.fill_nt.restype = self.copy_nt.restype = None
        self.fill_nt.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint32]
        self.copy_nt.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        self.threads = os.cpu_count() or 1

    def fill(self, arr, word: int) -> None:
        """Fill a contiguous uint32/float32 array with ``word``."""
        self.fill_nt(arr.ctypes.data, arr.size, word)

    def copy(self, dst, src) -> None:
        assert dst.nbytes == src.nbytes and dst.flags.c_contiguous and src.flags.c_contiguous
        self.copy_nt(dst.ctypes.data, src.ctypes.data, dst.nbytes, self.threads)


_STREAMS: dict = {}


def streams() -> "Streams | None":
    """This process's helper (built and loaded once), or None where no C compiler works."""
    path = library()
    if path is None:
        return None
    if path not in _STREAMS:
        import ctypes
        try:
            _STREAMS[path] = Streams(ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_LOCAL))
        except (OSError, AttributeError):
            _STREAMS[path] = None
    return _STREAMS[path]
