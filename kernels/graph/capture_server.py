"""The capture fork server: torch loaded and ``torch.export`` warmed up once, then one
forked child per capture.

A capture spawned from scratch spends ~5 s importing torch and warming up the export paths
before it reads the user's file; a child forked from this server starts from that state in
milliseconds and then does exactly what a fresh one does (kernels/graph/capture_child.py:
read its request, isolate itself — network namespace, uid 65534, rlimits, the ``capture``
seccomp profile — and only then run the user's code). The server never runs user code.

Protocol (JSON lines on a socket pair, as the harness's fork server speaks):

    ← {"kind": "ready"}
    → {"kind": "spawn", "workdir": path} + 3 fds (stdout, stderr, protocol)
    ← {"kind": "spawned", "pid": N}   later   ← {"kind": "exited", "pid": N, "returncode": R}
    → {"kind": "kill", "pid": N}      (the client's watchdog fired)

:class:`Client` is the trusted side: one server per thread, started on first use, replaced
when it dies; :func:`run` returns a ``sandbox.ProcessResult`` like ``sandbox.run_process``.
"""
from __future__ import annotations

import json
import os
import select
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time

from kernels.harness import sandbox


class ServerError(RuntimeError):
    pass


class Client:
    _local = threading.local()

    @classmethod
    def for_this_thread(cls) -> "Client":
        c = getattr(cls._local, "client", None)
        if c is None or c.proc.poll() is not None:
            c = cls._local.client = cls()
        return c

    def __init__(self):
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        env = sandbox.minimal_env({"INT21_CAPTURE_FD": str(child.fileno())})
        self.proc = subprocess.Popen([sys.executable, "-s", "-B", "-m", "kernels.graph.capture_server"],
                                     cwd=str(sandbox.PROJECT_ROOT), env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     pass_fds=(child.fileno(),), start_new_session=True)
        child.close()
        self.sock, self.buf = parent, b""
        self.lock = threading.Lock()
        try:
            hello = self._read(180)
        except (TimeoutError, ServerError):
            self.stop()
            raise ServerError("the capture server did not start") from None
        if hello.get("kind") != "ready":
            self.stop()
            raise ServerError(f"the capture server did not start: {hello}")

    def stop(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()

    def _read(self, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            ready, _, _ = select.select([self.sock], [], [], left)
            if ready:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise ServerError("the capture server closed its connection")
                self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def run(self, workdir: str, wall_seconds: float) -> sandbox.ProcessResult:
        with self.lock:
            pipes = [os.pipe() for _ in range(3)]
            start = time.monotonic()
            msg = json.dumps({"kind": "spawn", "workdir": workdir}).encode() + b"\n"
            try:
                socket.send_fds(self.sock, [msg], [w for _, w in pipes])
            finally:
                for _, w in pipes:
                    os.close(w)
            drains = [sandbox._Drain(pipes[0][0], sandbox.OUTPUT_CAP), sandbox._Drain(pipes[1][0], sandbox.OUTPUT_CAP),
                      sandbox._Drain(pipes[2][0], sandbox.PROTOCOL_CAP)]
            for d in drains:
                d.start()
            timed_out = False
            try:
                spawned = self._read(30)
                try:
                    status = self._read(max(0.1, wall_seconds - (time.monotonic() - start)))
                except TimeoutError:
                    timed_out = True
                    self.sock.sendall(json.dumps({"kind": "kill", "pid": spawned["pid"]}).encode() + b"\n")
                    status = self._read(30)
            except (TimeoutError, ServerError, OSError) as exc:
                self.stop()
                raise ServerError(f"the capture server stopped answering: {exc}") from None
            for d in drains:
                d.join(timeout=5)
            res = sandbox.ProcessResult(status.get("returncode"), timed_out, time.monotonic() - start,
                                        drains[0].text(), drains[1].text(), drains[0].truncated,
                                        drains[1].truncated)
            res.records = sandbox._parse_records(drains[2].text())
            return res


# --------------------------------------------------------------------------- server

def _child(sock, fds, workdir, wake, prepared) -> None:
    code = 70
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.set_wakeup_fd(-1)
        os.setsid()
        sock.close()
        for fd in wake:
            os.close(fd)
        for target, fd in zip((1, 2, 3), fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 3:
                os.close(fd)
        os.closerange(4, 1024)
        os.environ["INT21_PROTO_FD"] = "3"
        from kernels.graph import capture_child
        code = capture_child.main(workdir, prepared=prepared)
    except BaseException as exc:   # never return into the server loop
        try:
            os.write(2, f"capture child setup failed: {exc!r}\n".encode())
        except OSError:
            pass
    finally:
        os._exit(code)


def _send(sock, msg) -> None:
    sock.sendall(json.dumps(msg).encode() + b"\n")


def main() -> int:
    sock = socket.socket(fileno=int(os.environ.pop("INT21_CAPTURE_FD")))
    from kernels.graph import capture_child
    prepared = capture_child.prepare()
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    children: set[int] = set()
    _send(sock, {"kind": "ready"})
    sel = selectors.DefaultSelector()
    sel.register(sock, selectors.EVENT_READ, "sock")
    sel.register(wake_r, selectors.EVENT_READ, "wake")
    buf, pending = b"", []
    try:
        while True:
            for key, _ in sel.select():
                if key.data == "wake":
                    os.read(wake_r, 4096)
                    while children:
                        try:
                            pid, status = os.waitpid(-1, os.WNOHANG)
                        except ChildProcessError:
                            break
                        if pid == 0:
                            break
                        children.discard(pid)
                        _send(sock, {"kind": "exited", "pid": pid, "returncode": os.waitstatus_to_exitcode(status)})
                    continue
                data, fds, _, _ = socket.recv_fds(sock, 65536, 8)
                if not data:
                    return 0
                buf += data
                pending.extend(fds)
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    msg = json.loads(line)
                    if msg["kind"] == "spawn":
                        three, pending = pending[:3], pending[3:]
                        pid = os.fork()
                        if pid == 0:
                            _child(sock, three, msg["workdir"], (wake_r, wake_w), prepared)
                        for fd in three:
                            os.close(fd)
                        children.add(pid)
                        _send(sock, {"kind": "spawned", "pid": pid})
                    elif msg["kind"] == "kill" and msg["pid"] in children:
                        for kill in (os.killpg, os.kill):
                            try:
                                kill(msg["pid"], signal.SIGKILL)
                            except ProcessLookupError:
                                pass
    finally:
        for pid in children:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


if __name__ == "__main__":
    sys.exit(main())
