"""Work a process does every few seconds beside its main job, from a daemon thread: an
evaluation attempt's heartbeat (runs.delivery), a driver's lease (runs.lease), a worker's
presence in the fleet (fleet.worker), the revival of undriven runs (runs.recovery).

One loop for all of them, so each meets a database that is away for a moment the same way
(a beat that raises is logged where asked, the broken connection is dropped and the next beat
tries again) and each thread closes its own database connection when it ends."""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Callable


def start(name: str, every: float | Callable[[], float], beat: Callable[[], bool | None], *,
          stop: threading.Event | None = None, first_now: bool = False, log=None, failure: str = "") -> threading.Thread:
    """Call ``beat()`` from a daemon thread named ``name`` every ``every`` seconds (a number, or
    a function read before each wait) until ``stop`` is set or ``beat`` returns False;
    ``first_now`` beats once before the first wait. A beat that raises is logged on ``log``
    (``failure``, with the traceback) and does not end the loop. Returns the started thread."""
    stop = stop or threading.Event()

    def once() -> bool:
        from django.db import close_old_connections
        try:
            return beat() is not False
        except Exception:   # the database away for a moment: the next beat tries again
            if log is not None:
                log.warning(failure or f"{name} failed", exc_info=True)
            close_old_connections()
            return True

    def loop() -> None:
        from django.db import connection
        try:
            if first_now and not once():
                return
            while not stop.wait(every() if callable(every) else every):
                if not once():
                    return
        finally:
            connection.close()

    thread = threading.Thread(target=loop, name=name, daemon=True)
    thread.start()
    return thread


@contextmanager
def beating(name: str, every: float | Callable[[], float], beat: Callable[[], bool | None], **options):
    """``start`` for the length of a ``with`` body; the thread is stopped (and waited for, up
    to 5 s) when the body ends, however it ends."""
    stop = threading.Event()
    thread = start(name, every, beat, stop=stop, **options)
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)
