"""The evaluator's side of its sandbox processes: start, drive one call at a time, stop, kill.

Two kinds, one protocol (text lines; see ``runner.c`` and ``server.py``):

- :class:`RunnerProcess` execs a candidate's executable (the trusted C runner linked with the
  audited kernel object). It is stopped (SIGSTOP) whenever it is not being called, so nothing
  it left running can use a core while anything else is timed, and it is timed from outside:
  the parent's clock around each "call" … "done".
- :class:`ServerProcess` is a trusted Python process (a baseline, or a GPU's host side),
  forked from the fork server (NumPy and torch already imported) or spawned fresh. Same
  calls; a GPU process also reports the device time of each call (CUDA events).

Whatever comes back is checked here: a reply that is not the next expected line of the
protocol is the candidate's doing (``Reply.kind == "unexpected"``), never an exception.
"""
from __future__ import annotations

import fcntl
import json
import os
import resource
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from kernels.harness.sandbox import OUTPUT_CAP, ZygoteError, _Drain, minimal_env

LINE_CAP = 4096          # no protocol line the runner or a server writes is longer


@dataclass
class Reply:
    """One answer from a sandbox process. ``kind``: done | fault | died | timeout | unexpected."""

    kind: str
    seconds: float = 0.0                    # wall time of the call, the evaluator's clock
    device_seconds: float | None = None     # a GPU process's own CUDA-event time for the call
    fields: list[str] = field(default_factory=list)
    text: str = ""

    @property
    def ok(self) -> bool:
        return self.kind in ("done", "ready")


@dataclass
class Exit:
    returncode: int | None
    timed_out: bool
    stdout: str = ""
    stderr: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False

    @property
    def signal(self) -> int | None:
        return -self.returncode if self.returncode is not None and self.returncode < 0 else None

    def describe(self) -> str:
        if self.timed_out:
            return "ran past its wall-clock limit and was killed"
        if self.signal:
            try:
                name = signal.Signals(self.signal).name
            except ValueError:
                name = f"signal {self.signal}"
            return f"was killed by {name}"
        if self.returncode is not None and self.returncode > 128:
            try:
                return f"died of {signal.Signals(self.returncode - 128).name}"
            except ValueError:
                pass
        return f"exited with code {self.returncode}"


class _Lines:
    """Line reader over a pipe with a deadline; keeps at most LINE_CAP bytes per line."""

    def __init__(self, fd: int):
        self.fd = fd
        self.buf = b""
        self.eof = False

    def read(self, deadline: float) -> tuple[str | None, str]:
        """(line, why): line without its newline, or None with why in ("eof", "timeout", "overlong")."""
        while b"\n" not in self.buf:
            if len(self.buf) > LINE_CAP:
                return None, "overlong"
            if self.eof:
                return None, "eof"
            left = deadline - time.monotonic()
            if left <= 0:
                return None, "timeout"
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                return None, "timeout"
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                self.eof = True
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode("utf-8", "replace"), ""


def _cpu_ns(pid: int) -> tuple[int, int, dict] | None:
    """(CPU nanoseconds of all live threads, thread count, ns per thread id) from
    /proc/<pid>/task/*/schedstat."""
    total, per = 0, {}
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                ns = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        total += ns
        per[tid] = ns
    return total, len(per), per


def busy_threads(cpu0: dict | None, cpu1: dict | None, share: float = 0.05) -> int | None:
    """How many threads did a share (``share``) of the process's CPU work between two
    ``cpu()`` samples. Unlike CPU time per wall second, this does not depend on how busy the
    host is: a second thread that computes half of every call is busy however it is scheduled."""
    if not cpu0 or not cpu1 or "per_thread" not in cpu1:
        return None
    before = cpu0.get("per_thread") or {}
    deltas = [ns - before.get(tid, 0) for tid, ns in cpu1["per_thread"].items()]
    total = sum(d for d in deltas if d > 0)
    if total <= 0:
        return None
    return sum(1 for d in deltas if d >= share * total)


def _stat_cpu_ns(pid: int) -> int | None:
    """The whole process's user + system time (threads that exited included), in ns."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * 1_000_000_000 // os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


class _Base:
    name = "process"

    def __init__(self, deadline: float):
        self.deadline = deadline
        self.limit_s = deadline - time.monotonic()
        self.pid: int | None = None
        self.lines: _Lines | None = None
        self.ctrl: int | None = None
        self.drains: list[_Drain] = []
        self.seq = 0
        self.dead: Exit | None = None
        self.timed_out = False

    # -- protocol
    def send(self, text: str, extra: bytes = b"") -> bool:
        data = text.encode() + b"\n" + extra
        try:
            while data:
                n = os.write(self.ctrl, data)
                data = data[n:]
            return True
        except OSError:
            return False

    def expect(self, word: str, deadline: float | None = None) -> Reply:
        line, why = self.lines.read(deadline or self.deadline)
        if line is None:
            if why == "timeout":
                self.timed_out = True
                self.kill()
                return Reply("timeout")
            if why == "overlong":
                return Reply("unexpected", text=self.lines.buf[:200].decode("utf-8", "replace"))
            return Reply("died")
        parts = line.split()
        if parts and parts[0] == word:
            return Reply(word, fields=parts[1:], text=line)
        if parts and parts[0] == "fault" and len(parts) == 3:
            return Reply("fault", fields=parts[1:], text=line)
        return Reply("unexpected", text=line)

    def call(self, tokens: str, *, perturb: int = 0, ncalls: int = 1, nargs: int = 0) -> Reply:
        """One batch of calls; the evaluator's clock around it."""
        self.seq += 1
        self.resume()
        t0 = time.perf_counter_ns()
        if not self.send(f"call {self.seq} {perturb} {ncalls} {nargs} {tokens}".rstrip()):
            return Reply("died")
        reply = self.expect("done")
        t1 = time.perf_counter_ns()
        self.pause()
        reply.seconds = (t1 - t0) / 1e9
        if reply.ok:
            if not reply.fields or reply.fields[0] != str(self.seq):
                return Reply("unexpected", text=reply.text[:200], seconds=reply.seconds)
        return reply

    def resume(self) -> None:
        """Let a process stopped between calls (``pause``) run again."""
        if getattr(self, "stopped", False) and self.pid:
            try:
                os.kill(self.pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
            self.stopped = False

    def pause(self) -> None:
        pass

    # -- end
    def kill(self) -> None:
        if self.pid is None:
            return
        for kill in (os.killpg, os.kill):
            try:
                kill(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def _texts(self) -> dict:
        for d in self.drains:
            d.join(timeout=5)
        out, err = (self.drains + [None, None])[:2]
        return dict(stdout=out.text() if out else "", stderr=err.text() if err else "",
                    stdout_truncated=bool(out and out.truncated), stderr_truncated=bool(err and err.truncated))


class RunnerProcess(_Base):
    """The candidate's executable, started for one phase of one evaluation and used once."""

    name = "candidate"

    def __init__(self, executable: Path, *, inputs, outputs, box, wall_seconds: float, memory_mb: int,
                 cpu_seconds: int, program: bytes | None = None, env: dict | None = None):
        super().__init__(time.monotonic() + wall_seconds)
        self.box = box
        status_r, status_w = os.pipe()
        ctrl_r, ctrl_w = os.pipe()
        in_ro = inputs.readonly_fd()
        out_rw = os.dup(outputs.fd)
        out_pipe, err_pipe = os.pipe(), os.pipe()
        # Address space: what the runner and its libraries map (~64 MiB), the two arenas, and
        # the goal's allowance. Set before exec, so an executable that asks the loader for more
        # (a huge zero-initialised global) fails to load rather than mapping it.
        cap = (256 << 20) + inputs.size + outputs.size + (memory_mb << 20)
        sources = (status_w, ctrl_r, in_ro, out_rw)

        place = _dup_to(sources, (3, 4, 5, 6))

        def preexec():
            place()
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

        self.load_error: str | None = None
        try:
            self.proc = subprocess.Popen(
                [str(executable)], cwd=str(box.run_dir), env=env or minimal_env(),
                stdin=subprocess.DEVNULL, stdout=out_pipe[1], stderr=err_pipe[1], close_fds=False,
                start_new_session=True, preexec_fn=preexec)
        except OSError as exc:
            self.proc = None
            self.load_error = f"{exc.strerror or exc}"
        finally:
            for fd in (status_w, ctrl_r, in_ro, out_rw, out_pipe[1], err_pipe[1]):
                os.close(fd)
        self.ctrl = ctrl_w
        self.lines = _Lines(status_r)
        self.drains = [_Drain(out_pipe[0], OUTPUT_CAP), _Drain(err_pipe[0], OUTPUT_CAP)]
        for d in self.drains:
            d.start()
        self.stopped = False
        self.isolation: list[str] = []
        self.mxcsr: str | None = None
        self.omp_threads: str | None = None
        self.bases = (0, 0)
        if self.proc is None:
            self.ready = Reply("died", text=self.load_error or "")
            return
        self.pid = self.proc.pid
        box.track(self.pid)
        from kernels.harness import seccomp
        prog = program if program is not None else seccomp.program(self.pid)
        self.send(f"setup {inputs.size} {outputs.size} {box.uid if box.root_user else 0} {box.gid} "
                  f"{cpu_seconds} 16 1 {len(prog)}", prog)
        ready = self.expect("ready")
        self.ready = ready
        if ready.ok and len(ready.fields) >= 4:
            try:
                self.bases = (int(ready.fields[0], 16), int(ready.fields[1], 16))
            except ValueError:
                self.ready = Reply("unexpected", text=ready.text)
            self.mxcsr, self.omp_threads = ready.fields[2], ready.fields[3]
            self.isolation = ready.fields[4:]
        elif ready.ok:
            self.ready = Reply("unexpected", text=ready.text)
        if self.ready.ok:
            self.pause()
            self.cpu_start = self.cpu()


    def pause(self) -> None:
        """Stop the whole process and wait until it is stopped (every thread)."""
        if self.pid is None or self.stopped or self.dead:
            return
        try:
            os.kill(self.pid, signal.SIGSTOP)
        except ProcessLookupError:
            return
        try:
            pid, status = os.waitpid(self.pid, os.WUNTRACED)
        except ChildProcessError:
            return
        if os.WIFSTOPPED(status):
            self.stopped = True
        else:
            self._reaped(status)

    def _reaped(self, status: int) -> None:
        code = os.waitstatus_to_exitcode(status)
        self.proc.returncode = code
        self.dead = Exit(code, self.timed_out)

    def cpu(self) -> dict | None:
        """CPU time so far (all threads, ns), live threads, and whether threads exited."""
        if self.pid is None:
            return None
        live = _cpu_ns(self.pid)
        whole = _stat_cpu_ns(self.pid)
        if live is None:
            return None
        return {"ns": live[0], "threads": live[1], "per_thread": live[2], "whole_ns": whole}

    def close(self) -> Exit:
        """Ask the runner to exit (or kill it), reap it, kill the rest of its group."""
        if self.proc is None:
            return Exit(None, False, stderr=f"could not be started: {self.load_error}")
        if self.dead is None:
            self.resume()
            self.send("exit")
            try:
                status = self._wait(2.0)
            except ChildProcessError:
                status = None
            if status is None:
                self.kill()
                try:
                    _, status = os.waitpid(self.pid, 0)
                except ChildProcessError:
                    status = 0
            self._reaped(status)
        self.kill()   # the group: nothing outlives the phase
        try:
            os.close(self.ctrl)
        except OSError:
            pass
        try:
            os.close(self.lines.fd)
        except OSError:
            pass
        exit_ = self.dead
        exit_.timed_out = self.timed_out
        for k, v in self._texts().items():
            setattr(exit_, k, v)
        return exit_

    def _wait(self, seconds: float):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return status
            time.sleep(0.002)
        return None

    def reap_if_dead(self) -> None:
        """After a reply of "died" or "fault": collect the exit status."""
        if self.dead is not None or self.pid is None:
            return
        try:
            status = self._wait(5.0)
        except ChildProcessError:
            return
        if status is None:
            self.kill()
            try:
                _, status = os.waitpid(self.pid, 0)
            except ChildProcessError:
                return
        self._reaped(status)


class ServerProcess(_Base):
    """A trusted Python sandbox process (``kernels.harness.server``): one baseline, the copy
    probe, or a GPU's host side running a candidate's device code. ``spec`` (JSON) says what
    it prepares; it answers "ready" when it has, after any number of "info" lines."""

    def __init__(self, spec: dict, *, inputs, box, wall_seconds: float, launcher: str = "zygote",
                 name: str = "baseline", outputs=None):
        super().__init__(time.monotonic() + wall_seconds)
        self.name = name
        self.box = box
        status_r, status_w = os.pipe()
        ctrl_r, ctrl_w = os.pipe()
        in_ro = inputs.readonly_fd() if inputs is not None else os.open("/dev/null", os.O_RDONLY)
        out_rw = os.dup(outputs.fd) if outputs is not None else os.open("/dev/null", os.O_RDONLY)
        out_pipe, err_pipe = os.pipe(), os.pipe()
        fds = [out_pipe[1], err_pipe[1], status_w, ctrl_r, in_ro, out_rw]
        self.ctrl = ctrl_w
        self.lines = _Lines(status_r)
        self.drains = [_Drain(out_pipe[0], OUTPUT_CAP), _Drain(err_pipe[0], OUTPUT_CAP)]
        self.zygote = None
        self.proc = None
        self.error: str | None = None
        self.info: dict = {}
        self.failure: str | None = None
        self.isolation: list[str] = []
        self.bases = (0, 0)
        self.mxcsr = self.omp_threads = None
        try:
            if launcher == "zygote":
                from kernels.harness.sandbox import Zygote
                try:
                    self.zygote = Zygote.for_this_thread()
                    self.pid = self.zygote.fork_server(fds, cwd=str(box.dir))
                except ZygoteError:
                    self.zygote = None
            if self.pid is None:
                self.proc = subprocess.Popen(
                    [sys.executable, "-s", "-B", "-m", "kernels.harness.server"], cwd=str(box.dir),
                    env=minimal_env(), stdin=subprocess.DEVNULL, stdout=fds[0], stderr=fds[1],
                    close_fds=False, start_new_session=True, preexec_fn=_dup_to(fds[2:], (3, 4, 5, 6)))
                self.pid = self.proc.pid
        except OSError as exc:
            self.error = str(exc)
        finally:
            for fd in fds:
                os.close(fd)
        for d in self.drains:
            d.start()
        self.stopped = False
        if self.pid is None:
            self.ready = Reply("died", text=self.error or "could not be started")
            return
        box.track(self.pid)
        self.send(json.dumps(spec))
        while True:
            reply = self.expect("ready")
            if reply.kind == "unexpected" and reply.text.startswith("info "):
                try:
                    self.info.update(json.loads(reply.text[5:]))
                except ValueError:
                    pass
                continue
            if reply.kind == "unexpected" and reply.text.startswith("failed "):
                try:
                    self.failure = str(json.loads(reply.text[7:]))
                except ValueError:
                    self.failure = reply.text[7:]
            break
        self.ready = reply
        if reply.ok:
            self.isolation = reply.fields
            self.pause()


    def pause(self) -> None:
        # Not our child when forked by the fork server: stopped without waiting for it. A
        # trusted baseline's idle threads sleep anyway; this keeps a user's model honest too.
        if self.pid and not self.stopped:
            try:
                os.kill(self.pid, signal.SIGSTOP)
                self.stopped = True
            except ProcessLookupError:
                pass

    def call(self, tokens: str = "", *, perturb: int = 0, ncalls: int = 1, nargs: int = 0) -> Reply:
        reply = super().call(tokens, perturb=perturb, ncalls=ncalls, nargs=nargs)
        if reply.ok and len(reply.fields) >= 2 and reply.fields[1] != "-":
            try:
                reply.device_seconds = float(reply.fields[1])
            except ValueError:
                return Reply("unexpected", text=reply.text)
        return reply

    def cpu(self) -> dict | None:
        live = _cpu_ns(self.pid) if self.pid else None
        return {"ns": live[0], "threads": live[1], "per_thread": live[2], "whole_ns": _stat_cpu_ns(self.pid)} \
            if live else None

    def _collect(self, timeout: float) -> int | None:
        if self.proc is not None:
            try:
                return self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                return None
        if self.zygote is not None and self.pid:
            return self.zygote.reap(self.pid, timeout=timeout)
        return None

    def reap_if_dead(self) -> None:
        if self.dead is not None or self.pid is None:
            return
        code = self._collect(5.0)
        if code is None:
            self.kill()
            code = self._collect(5.0)
        self.dead = Exit(code, self.timed_out, **self._texts())

    def close(self) -> Exit:
        if self.dead is None:
            self.resume()
            self.send("exit")
            code = self._collect(5.0)
            if code is None:
                self.kill()
                code = self._collect(5.0)
            self.dead = Exit(code, self.timed_out, **self._texts())
        self.kill()
        for fd in (self.ctrl, self.lines.fd):
            try:
                os.close(fd)
            except OSError:
                pass
        return self.dead


def _dup_to(sources, targets):
    """A preexec function: ``sources`` at the descriptor numbers ``targets``, then every other
    inheritable descriptor above them closed (close-on-exec ones, subprocess's error pipe among
    them, close at exec). Used with close_fds=False rather than pass_fds=targets: that needs the
    parent's own descriptors at those numbers open at the fork, which another thread of a
    worker may have closed just then (the child then fails with EBADF)."""
    top = max(targets)

    def preexec():
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 100) for fd in sources]
        for target, fd in zip(targets, high):
            os.dup2(fd, target)
        for name in os.listdir("/proc/self/fd"):
            fd = int(name)
            if fd > top:
                try:
                    if os.get_inheritable(fd):
                        os.close(fd)
                except OSError:
                    pass
    return preexec
