"""What an orchestrate worker does besides running ``drive_run`` tasks: every
INT21_RECOVER_EVERY seconds it queues the driver of any running run that nobody drives
(its driver's process was killed, or its message was lost with a broker that forgot it).
A duplicate driver finds the run's lease taken and returns, so this is always safe.
(Named for what it does; the worker process's own fleet signals are ``fleet.worker``.)"""
from __future__ import annotations

import logging

from django.conf import settings

from int21web import beats

log = logging.getLogger(__name__)
ORCHESTRATE = "orchestrate"


def on_worker_ready(sender=None, **_):
    from int21web.fleet.worker import queues_of
    if settings.CELERY_EMBEDDED or ORCHESTRATE not in queues_of(sender):
        return
    beats.start("runs-recover", lambda: settings.INT21_RECOVER_SECONDS, _recover, log=log,
                failure="run recovery failed; trying again later")


def _recover() -> None:
    from int21web.runs import services
    revived = services.run_recover(grace_seconds=max(settings.INT21_DRIVE_LEASE_SECONDS,
                                                     2 * settings.INT21_RECOVER_SECONDS))
    if revived:
        log.warning("queued the driver of undriven run(s) %s", revived)


def connect() -> None:
    from celery import signals
    signals.worker_ready.connect(on_worker_ready, weak=False, dispatch_uid="int21-runs-recover")
