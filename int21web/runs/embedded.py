"""The embedded workers: Celery workers in threads of this process, on the in-process
broker. Used by `make run` (``manage.py serve``) and by commands when no broker is set.

Two workers, because a run's driver (orchestrate queue) waits on the evaluations it queued
(target queues): one solo worker for both would wait on itself."""
from contextlib import ExitStack, contextmanager

from django.conf import settings

from kernels import targets

TARGET_QUEUES = tuple(f"target.{name}" for name in targets.names())   # one queue per registered target
ORCHESTRATE = "orchestrate"


@contextmanager
def embedded_worker(queues=TARGET_QUEUES, orchestrate: bool = False):
    """Yields the running workers in embedded mode; yields None when a real broker is set
    (then `celery -A int21web worker -Q target.cpu` processes must be running)."""
    if not settings.CELERY_EMBEDDED:
        yield None
        return
    from celery.contrib.testing.worker import start_worker

    from int21web.celery import app
    groups = [list(queues)] + ([[ORCHESTRATE]] if orchestrate else [])
    with ExitStack() as stack:
        workers = [stack.enter_context(start_worker(app, pool="solo", concurrency=1, perform_ping_check=False,
                                                    queues=qs, loglevel="WARNING", shutdown_timeout=60))
                   for qs in groups]
        yield workers


def serving(target: str) -> str | None:
    """None when evaluations on ``target`` will be served (the embedded workers, else a live
    worker of the fleet); otherwise the sentence a command prints instead of waiting forever."""
    if settings.CELERY_EMBEDDED:
        return None
    from int21web.fleet.selectors import live_worker_for
    av = live_worker_for(target)
    return None if av else f"a broker is set (CELERY_BROKER_URL) and {av.reason}"
