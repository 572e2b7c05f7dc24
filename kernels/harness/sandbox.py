"""Running untrusted work in a child process: limits, a watchdog, capped output.

Two ways to get a fresh child, both used once per candidate:

- :func:`run_process` execs a program (the compiler, or a fresh Python for the child);
- :class:`Zygote` forks a child from a small server process that has already imported
  NumPy and torch but never loaded candidate code, so a child starts in milliseconds
  instead of the seconds torch takes to import.

Either way the child gets a new session (its own process group, so the watchdog kills
everything it started), a minimal environment, no inherited descriptors beyond its
pipes, a working directory of its own, and resource limits. Its stdout/stderr are always
drained (a chatty child cannot deadlock us) and capped.
"""
from __future__ import annotations

import json
import os
import tempfile
import resource
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

OUTPUT_CAP = 64 * 1024           # bytes of stdout/stderr kept per stream
PROTOCOL_CAP = 16 * 1024 * 1024  # bytes of protocol records kept
PROJECT_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Limits:
    """Resource limits for one child. ``memory_mb`` is address space on top of what the
    child already maps when it sets its limits (Python + NumPy + torch)."""

    wall_seconds: float = 180.0
    cpu_seconds: int = 600
    memory_mb: int = 4096
    file_mb: int = 1024
    open_files: int = 256


@dataclass
class ProcessResult:
    returncode: int | None
    timed_out: bool
    seconds: float
    stdout: str = ""
    stderr: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    records: list = field(default_factory=list)
    tampered: str | None = None   # set by the evaluator when records fail authentication

    @property
    def signal(self) -> int | None:
        return -self.returncode if self.returncode is not None and self.returncode < 0 else None

    def describe_exit(self) -> str:
        if self.timed_out:
            return f"ran past its {self.seconds:.1f} s wall-clock limit and was killed"
        if self.signal:
            try:
                name = signal.Signals(self.signal).name
            except ValueError:
                name = f"signal {self.signal}"
            return f"was killed by {name}"
        return f"exited with code {self.returncode}"


# What idle OpenMP threads do in every sandbox child (minimal_env says why: passive). A benchmark
# may set None before any child starts, to time as a serving process runs (libgomp's default:
# idle threads spin a while, then sleep), and says so in its results; the product never does.
OMP_WAIT_POLICY: str | None = "PASSIVE"


def minimal_env(extra: dict | None = None) -> dict:
    """What a child sees: no secrets, no OpenBLAS overrides (the baseline runs its native
    kernel), threads pinned to what the host has."""
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": "/nonexistent",
        # INT21_SANDBOX_PYTHONPATH: modules sandbox processes may import ahead of the project
        # (the GPU path's tests put a NumPy stand-in for CuPy there); set by whoever runs the host.
        "PYTHONPATH": os.pathsep.join(p for p in (os.environ.get("INT21_SANDBOX_PYTHONPATH", ""),
                                                  str(PROJECT_ROOT)) if p),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
        # Idle OpenMP threads sleep instead of spinning. It must be in the environment the
        # fork server starts with: libgomp reads it once, when torch loads it there, and a
        # spinning torch pool would otherwise bill its CPU time to the candidate timed next
        # (a correct single-threaded kernel then looks like one with hidden threads).
        "OMP_WAIT_POLICY": OMP_WAIT_POLICY,
        # The same for OpenBLAS's own pthread pool (NumPy's matmul baseline): its workers
        # spin for 2^28 cycles after each call by default, so the candidate timed right
        # after a BLAS call shared the cores with them (and was billed their CPU time).
        # 2^4 cycles, the least OpenBLAS accepts: idle workers go to sleep at once.
        "OPENBLAS_THREAD_TIMEOUT": "4",
    }
    # CUPY_CACHE_DIR: CuPy's cache of the helper kernels it compiles (fill, compare, the
    # baselines' reductions); without it each CUDA child compiles them again in its fresh
    # working folder. Only sandbox children should write there: CuPy's files are 0600, so
    # a folder shared between root and the unprivileged child breaks the one that can't read.
    for key in ("CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH", "CUPY_CACHE_DIR"):
        if key in os.environ:
            env[key] = os.environ[key]
    # Without one, CuPy caches under the (root) home the child cannot write after it drops to
    # nobody: every CUDA child then failed its set-up with "Permission denied".
    env.setdefault("CUPY_CACHE_DIR", _sandbox_cupy_cache())
    env.update(extra or {})
    if env.get("OMP_WAIT_POLICY") is None:
        env.pop("OMP_WAIT_POLICY", None)
    return env


def _sandbox_cupy_cache() -> str:
    """A CuPy cache folder for sandbox children only (sticky, world-writable like /tmp)."""
    path = os.path.join(tempfile.gettempdir(), "int21-sandbox-cupy-cache")
    try:
        os.makedirs(path, exist_ok=True)
        if os.stat(path).st_uid == os.getuid():
            os.chmod(path, 0o1777)
    except OSError:
        pass
    return path


def apply_limits(limits: Limits, *, relative_memory: bool = True, address_space: bool = True) -> None:
    """Called inside the child, on itself, before it touches candidate code."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 5))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_mb << 20, limits.file_mb << 20))
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files))
    if not address_space:
        return
    base = 0
    if relative_memory:
        try:
            with open("/proc/self/status") as f:
                for line in f:
                    if line.startswith("VmSize:"):
                        base = int(line.split()[1]) * 1024
        except OSError:
            base = 0
    cap = base + (limits.memory_mb << 20)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


class _Drain(threading.Thread):
    """Reads a pipe to EOF, keeping at most ``cap`` bytes."""

    def __init__(self, fd: int, cap: int):
        super().__init__(daemon=True)
        self.fd, self.cap = fd, cap
        self.chunks: list[bytes] = []
        self.kept = 0
        self.truncated = False

    def run(self):
        try:
            while True:
                chunk = os.read(self.fd, 65536)
                if not chunk:
                    break
                room = self.cap - self.kept
                if room > 0:
                    self.chunks.append(chunk[:room])
                    self.kept += min(room, len(chunk))
                if len(chunk) > room:
                    self.truncated = True
        except OSError:
            pass
        finally:
            os.close(self.fd)

    def text(self) -> str:
        return b"".join(self.chunks).decode("utf-8", "replace")


def _parse_records(raw: str) -> list:
    records = []
    for line in raw.splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            records.append({"kind": "garbled", "text": line[:200]})
    return records


def _preexec(limits: Limits | None):
    def fn():
        os.setsid()
        if limits is not None:
            apply_limits(limits, relative_memory=False)
    return fn


def run_process(argv: list[str], *, cwd: Path, limits: Limits, env: dict | None = None,
                protocol: bool = False, user: int | None = None, group: int | None = None) -> ProcessResult:
    """Exec ``argv`` in a new session with ``limits``; kill the group at the wall limit.

    With ``protocol=True`` the child gets a third pipe as fd 3 for JSON-line records
    (kept apart from stdout, which the candidate could in principle reach).
    """
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    proto_r = proto_w = None
    pass_fds = ()
    if protocol:
        proto_r, proto_w = os.pipe()
        pass_fds = (proto_w,)
    env = dict(env if env is not None else minimal_env())
    if proto_w is not None:
        env["INT21_PROTO_FD"] = str(proto_w)
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
            stdout=out_w, stderr=err_w, pass_fds=pass_fds, close_fds=True,
            preexec_fn=_preexec(limits if not protocol else None),
            user=user, group=group, extra_groups=[] if user is not None else None,
        )
    finally:
        os.close(out_w)
        os.close(err_w)
        if proto_w is not None:
            os.close(proto_w)
    drains = [_Drain(out_r, OUTPUT_CAP), _Drain(err_r, OUTPUT_CAP)]
    if proto_r is not None:
        drains.append(_Drain(proto_r, PROTOCOL_CAP))
    for d in drains:
        d.start()
    timed_out = not _wait(proc, limits.wall_seconds)
    if timed_out:
        _kill_group(proc.pid)
        proc.wait()
    _kill_group(proc.pid)  # anything the child left behind in its session
    for d in drains:
        d.join(timeout=5)
    result = ProcessResult(
        returncode=proc.returncode, timed_out=timed_out, seconds=time.monotonic() - start,
        stdout=drains[0].text(), stderr=drains[1].text(),
        stdout_truncated=drains[0].truncated, stderr_truncated=drains[1].truncated,
    )
    if protocol:
        result.records = _parse_records(drains[2].text())
    return result


def _wait(proc: subprocess.Popen, seconds: float) -> bool:
    """True if the process exited within ``seconds``. Waits on a pidfd where the kernel has
    them (woken the moment it exits); Popen.wait(timeout) polls with sleeps of up to 50 ms."""
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        try:
            proc.wait(timeout=seconds)
            return True
        except subprocess.TimeoutExpired:
            return False
    try:
        ready, _, _ = select.select([fd], [], [], seconds)
    finally:
        os.close(fd)
    if ready:
        proc.wait()
        return True
    return proc.poll() is not None


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


# --------------------------------------------------------------------------- zygote client

class ZygoteError(RuntimeError):
    """The fork server could not be started or stopped answering (infrastructure fault)."""


class Zygote:
    """Client of ``kernels.harness.zygote``: one server per evaluating thread.

    ``fork_server`` hands the server five descriptors; it forks a child that runs
    :func:`kernels.harness.server.main` on them and tells us its pid, and later its exit
    status (collected by :meth:`reap`). The forked processes never run candidate code.
    """

    _local = threading.local()

    def __init__(self):
        self._sock = None
        self._proc = None
        self._lock = threading.Lock()
        self._exited: dict[int, int | None] = {}

    @classmethod
    def for_this_thread(cls) -> "Zygote":
        z = getattr(cls._local, "zygote", None)
        if z is None or not z.alive():
            z = cls._local.zygote = cls()
            z.start()
        return z

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> None:
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        env = minimal_env({"INT21_ZYGOTE_FD": str(child.fileno())})
        self._proc = subprocess.Popen(
            [sys.executable, "-s", "-B", "-m", "kernels.harness.zygote"],
            cwd=str(PROJECT_ROOT), env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(child.fileno(),), start_new_session=True,
        )
        child.close()
        self._sock = parent
        self._buf = b""
        self._exited: dict[int, int | None] = {}
        hello = self._read(timeout=120)
        if hello.get("kind") != "ready":
            raise ZygoteError(f"fork server did not start: {hello}")
        self.preloaded = hello.get("preloaded", [])

    def stop(self) -> None:
        if self._proc is not None:
            _kill_group(self._proc.pid)
            self._proc.wait()
            self._proc = None

    def _read(self, timeout: float | None) -> dict:
        """One JSON line from the server; ``TimeoutError`` if none arrives in time (the
        connection stays usable: we read the raw socket, never a file object, which
        refuses every read after its first timeout)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._buf:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise TimeoutError("fork server did not answer in time")
            ready, _, _ = select.select([self._sock], [], [], left)
            if not ready:
                continue
            try:
                chunk = self._sock.recv(65536)
            except OSError as exc:
                raise ZygoteError(f"fork server connection failed: {exc}") from exc
            if not chunk:
                raise ZygoteError("fork server closed its connection")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    def fork_server(self, fds: list[int], *, cwd: str) -> int:
        """Fork a server process (``kernels.harness.server``) on these six descriptors
        (stdout, stderr, status, control, inputs, outputs); returns its pid. The caller closes its
        copies of the descriptors; the server's exit status is collected by :meth:`reap`."""
        with self._lock:
            request = json.dumps({"kind": "server", "cwd": cwd}).encode() + b"\n"
            try:
                socket.send_fds(self._sock, [request], list(fds))
                while True:
                    msg = self._read(timeout=30)
                    if msg.get("kind") == "spawned":
                        return int(msg["pid"])
                    self._note(msg)
            except (TimeoutError, OSError) as exc:
                self.stop()
                raise ZygoteError(f"fork server did not answer: {exc}") from exc
            except ZygoteError:
                self.stop()
                raise

    def _note(self, msg: dict) -> None:
        if msg.get("kind") == "exited":
            self._exited[int(msg["pid"])] = msg.get("returncode")

    def reap(self, pid: int, *, timeout: float) -> int | None:
        """The exit status of a forked server, waiting up to ``timeout``; None if still running."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while pid not in self._exited:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                try:
                    self._note(self._read(timeout=left))
                except TimeoutError:
                    return None
                except ZygoteError:
                    return None
            return self._exited.pop(pid)
