"""The embedded workers: Celery workers in threads of this process, on the in-process
broker. Used by `make run` (``manage.py serve``) and by commands when no broker is set.

Two workers, because a run's driver (orchestrate queue) waits on the evaluations it queued
(target queues): one solo worker for both would wait on itself.

A worker whose thread ends while it should be serving (Celery's "Unrecoverable error", a
consumer that crashed) is seen within ``INT21_EMBEDDED_CHECK_SECONDS`` and started again; in
between, ``down()`` names it, so the run page and the Workers page say no worker serves the
target instead of showing the run as progressing. Queued messages stay in the in-process
broker and are served by the restarted worker."""
from __future__ import annotations

import logging
import os
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

from django.conf import settings

from int21web import beats
from kernels import targets

log = logging.getLogger(__name__)

TARGET_QUEUES = tuple(f"target.{name}" for name in targets.names())   # one queue per registered target
ORCHESTRATE = "orchestrate"

_current: "Supervisor | None" = None


@dataclass
class Slot:
    """One embedded worker: the queues it serves, the worker and its thread, and since when it
    is down (None while it serves)."""

    queues: list
    worker: object = None
    thread: threading.Thread | None = None
    down_since: float | None = None
    restarts: int = 0
    reason: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)


class Supervisor:
    def __init__(self, app, groups: list[list[str]], every: float | None = None):
        self.app, self.every = app, every or settings.INT21_EMBEDDED_CHECK_SECONDS
        self.slots = [Slot(list(qs)) for qs in groups]
        self.stopping = threading.Event()
        self.hold = threading.Event()     # tests: look at a dead worker before it is started again

    def start(self) -> None:
        from celery.contrib.testing.worker import setup_app_for_worker
        setup_app_for_worker(self.app, "WARNING", None)
        for slot in self.slots:
            self._start(slot)
        beats.start("embedded-workers", self.every, self.check, stop=self.stopping, log=log,
                    failure="checking the embedded workers failed")

    def _start(self, slot: Slot) -> None:
        from celery.contrib.testing.worker import TestWorkController
        from celery.utils.nodenames import anon_nodename
        worker = TestWorkController(app=self.app, concurrency=1, pool="solo", hostname=anon_nodename(),
                                    loglevel="WARNING", logfile=None, ready_callback=None, queues=slot.queues,
                                    without_heartbeat=True, without_mingle=True, without_gossip=True)
        thread = threading.Thread(target=worker.start, name=f"embedded-{'+'.join(slot.queues)}", daemon=True)
        thread.start()
        worker.ensure_started()
        from celery.result import _set_task_join_will_block
        _set_task_join_will_block(False)
        with slot.lock:
            slot.worker, slot.thread, slot.down_since, slot.reason = worker, thread, None, ""

    def check(self) -> None:
        """Start again any worker whose thread ended while it should serve."""
        for slot in self.slots:
            if self.stopping.is_set():
                return
            if slot.thread is not None and slot.thread.is_alive():
                continue
            with slot.lock:
                if slot.down_since is None:
                    slot.down_since = time.monotonic()
                    slot.reason = f"the embedded worker of {', '.join(slot.queues)} stopped"
                    log.error("%s; starting it again", slot.reason)
            if self.hold.is_set():
                continue
            slot.restarts += 1
            self._start(slot)
            log.warning("the embedded worker of %s is serving again (restart %d)", ", ".join(slot.queues),
                        slot.restarts)

    def down(self, queue: str) -> str | None:
        """Why ``queue`` has no serving worker now, or None while one serves it."""
        for slot in self.slots:
            if queue in slot.queues:
                alive = slot.thread is not None and slot.thread.is_alive()
                if alive and slot.down_since is None:
                    return None
                return (slot.reason or f"the embedded worker of {queue} stopped") + ": it is being started again"
        return f"no embedded worker serves {queue}"

    def kill(self, queue: str) -> None:
        """Stop the worker of ``queue`` as a crash would (tests): its thread ends, nothing restarts it
        until the next check."""
        for slot in self.slots:
            if queue in slot.queues:
                slot.worker.stop(in_sighandler=False, exitcode=1)
                slot.thread.join(30)

    def stop(self, timeout: float = 60) -> None:
        self.stopping.set()
        from celery.worker import state
        state.should_terminate = 0
        for slot in self.slots:
            if slot.thread is not None:
                slot.thread.join(timeout)
        state.should_terminate = None


def current() -> Supervisor | None:
    """The embedded workers of this process, while they run."""
    return _current


@contextmanager
def embedded_worker(queues=TARGET_QUEUES, orchestrate: bool = False):
    """Yields the embedded workers' supervisor; yields None when a real broker is set (then
    `celery -A int21web worker -Q target.cpu` processes must be running)."""
    global _current
    if not settings.CELERY_EMBEDDED:
        yield None
        return
    from int21web.celery import app
    with app.connection(hostname=os.environ.get("TEST_BROKER")) as conn:
        conn.default_channel.queue_declare
    sup = Supervisor(app, [list(queues)] + ([[ORCHESTRATE]] if orchestrate else []))
    sup.start()
    previous, _current = _current, sup
    try:
        yield sup
    finally:
        _current = previous
        sup.stop()


def serving(target: str) -> str | None:
    """None when evaluations on ``target`` will be served (the embedded workers, else a live
    worker of the fleet); otherwise the sentence a command prints instead of waiting forever."""
    if settings.CELERY_EMBEDDED:
        return None
    from int21web.fleet.selectors import live_worker_for
    av = live_worker_for(target)
    return None if av else f"a broker is set (CELERY_BROKER_URL) and {av.reason}"
