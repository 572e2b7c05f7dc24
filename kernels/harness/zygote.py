"""The fork server: imports NumPy and torch once, then forks one fresh sandbox process per request.

It never runs candidate code, and neither do its children: each child is a trusted server
process (``kernels.harness.server``: one baseline, or a GPU's host side) that isolates itself
before it prepares anything a user wrote. Speaks JSON lines over the socket in
``INT21_ZYGOTE_FD``:

    ← {"kind": "ready", "preloaded": [...]}
    → {"kind": "server", "cwd": path}  + 6 fds (stdout, stderr, status, control, inputs, outputs)
    ← {"kind": "spawned", "pid": N}     then later   ← {"kind": "exited", "pid": N, "returncode": R}
    → {"kind": "kill", "pid": N}        (the client's watchdog fired)

When the client goes away the server kills its children and exits.
"""
from __future__ import annotations

import importlib
import json
import os
import selectors
import signal
import socket
import sys


def _preload() -> list[str]:
    loaded = []
    for name in ("numpy", "threadpoolctl", "torch", "kernels.harness.server"):
        try:
            importlib.import_module(name)
            loaded.append(name)
        except Exception:  # an optional baseline library may be absent; the child says so later
            pass
    try:
        from kernels import workloads
        for wl in workloads.all_workloads():
            for baselines in wl.baselines.values():
                for b in baselines:
                    importlib.import_module(b.fn.split(":")[0])
        loaded.append("kernels.workloads")
    except Exception:
        pass
    return loaded


def _send(sock: socket.socket, msg: dict) -> None:
    sock.sendall(json.dumps(msg).encode() + b"\n")


def _child(sock: socket.socket, fds: list[int], cwd: str, wake_r: int, wake_w: int) -> None:
    code = 70
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.set_wakeup_fd(-1)
        os.setsid()
        sock.close()
        os.close(wake_r)
        os.close(wake_w)
        high = [os.dup(fd) for fd in fds]              # out of the way of the targets first
        for target, fd in zip((1, 2, 3, 4, 5, 6), high):
            os.dup2(fd, target)
        os.closerange(7, 65536)
        os.chdir(cwd)
        from kernels.harness import server
        code = server.main()
    except BaseException as exc:  # the child must never return into the server loop
        try:
            os.write(2, f"child setup failed: {exc!r}\n".encode())
        except OSError:
            pass
    finally:
        os._exit(code)


def main() -> int:
    sock = socket.socket(fileno=int(os.environ.pop("INT21_ZYGOTE_FD")))
    preloaded = _preload()
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    children: set[int] = set()
    _send(sock, {"kind": "ready", "preloaded": preloaded, "pid": os.getpid()})
    sel = selectors.DefaultSelector()
    sel.register(sock, selectors.EVENT_READ, "sock")
    sel.register(wake_r, selectors.EVENT_READ, "wake")
    buf = b""
    pending_fds: list[int] = []
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
                        _send(sock, {"kind": "exited", "pid": pid,
                                     "returncode": os.waitstatus_to_exitcode(status)})
                    continue
                data, fds, _, _ = socket.recv_fds(sock, 65536, 16)
                if not data:
                    return 0
                buf += data
                pending_fds.extend(fds)
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    msg = json.loads(line)
                    if msg["kind"] == "server":
                        fds6, pending_fds = pending_fds[:6], pending_fds[6:]
                        pid = os.fork()
                        if pid == 0:
                            _child(sock, fds6, msg["cwd"], wake_r, wake_w)
                        for fd in fds6:
                            os.close(fd)
                        children.add(pid)
                        _send(sock, {"kind": "spawned", "pid": pid})
                    elif msg["kind"] == "kill" and msg["pid"] in children:
                        # The child may not have called setsid yet: kill it by pid too.
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
