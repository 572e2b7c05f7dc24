"""What an orchestrate worker does besides running ``drive_run`` tasks: every
INT21_RECOVER_EVERY seconds it queues the driver of any running run that nobody drives
(its driver's process was killed, or its message was lost with a broker that forgot it).
A duplicate driver finds the run's lease taken and returns, so this is always safe."""
from __future__ import annotations

import logging
import threading

from django.conf import settings

log = logging.getLogger(__name__)
ORCHESTRATE = "orchestrate"


def on_worker_ready(sender=None, **_):
    from int21web.fleet.worker import queues_of
    if settings.CELERY_EMBEDDED or ORCHESTRATE not in queues_of(sender):
        return
    threading.Thread(target=_recover_forever, name="runs-recover", daemon=True).start()


def _recover_forever() -> None:
    from django.db import close_old_connections

    from int21web.runs import services
    stop = threading.Event()
    while not stop.wait(settings.INT21_RECOVER_SECONDS):
        try:
            revived = services.run_recover(grace_seconds=max(settings.INT21_DRIVE_LEASE_SECONDS,
                                                             2 * settings.INT21_RECOVER_SECONDS))
            if revived:
                log.warning("queued the driver of undriven run(s) %s", revived)
        except Exception:
            log.warning("run recovery failed; trying again later", exc_info=True)
            close_old_connections()


def connect() -> None:
    from celery import signals
    signals.worker_ready.connect(on_worker_ready, weak=False, dispatch_uid="int21-runs-recover")
