"""The embedded worker: a Celery worker in a thread of this process, on the in-process
broker. Used by `make run` and by commands when no broker is configured."""
from contextlib import contextmanager

from django.conf import settings

QUEUES = ("target.cpu", "target.cuda", "orchestrate")


@contextmanager
def embedded_worker(queues=QUEUES):
    """Yields a running worker in embedded mode; yields None when a real broker is set
    (then `celery -A int21web worker -Q target.cpu` processes must be running)."""
    if not settings.CELERY_EMBEDDED:
        yield None
        return
    from celery.contrib.testing.worker import start_worker

    from int21web.celery import app
    with start_worker(app, pool="solo", concurrency=1, perform_ping_check=False, queues=list(queues),
                      loglevel="WARNING", shutdown_timeout=60) as worker:
        yield worker
