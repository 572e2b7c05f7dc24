"""What a `celery -A int21web worker` process does about the fleet, through Celery's signals:

- before it starts: a worker for ``target.cuda`` refuses to start on a host where CuPy sees no
  GPU (a clear message, exit status 78); it runs one evaluation at a time on the one GPU it is
  pinned to (one worker per GPU, ``CUDA_VISIBLE_DEVICES``);
- when it is ready: it announces itself (queues, targets, host fingerprint) and then beats a
  heartbeat from a thread; when it stops: it says so.

Embedded workers (threads of the web process, ``runs.embedded``) do none of this: there the
web process itself is the fleet (``selectors.live_worker_for`` knows).
"""
from __future__ import annotations

import logging
import os
import socket
import sys
import threading

from django.conf import settings

from int21web import beats

log = logging.getLogger(__name__)
EX_CONFIG = 78   # sysexits.h: a configuration error

_stop = threading.Event()


class Refusal(Exception):
    """This worker must not start here; the message says why and what to do."""


def targets_of(queues) -> list[str]:
    return [q.split(".", 1)[1] for q in queues or () if q.startswith("target.")]


def gpu_concurrency(queues, concurrency: int | None) -> int | None:
    """The concurrency a worker with these queues must run at: 1 for target.cuda, one worker
    process per GPU (None: not a CUDA worker). Raises Refusal where it cannot run."""
    if "cuda" not in targets_of(queues):
        return None
    from kernels import targets
    ok, why = targets.get("cuda").can_run()
    if not ok:
        raise Refusal(f"this worker serves target.cuda, but {why}. Start CUDA workers only on GPU hosts "
                      f"(see docs/deploy.md); this host can serve target.cpu.")
    if concurrency is not None and concurrency != 1:
        raise Refusal(f"target.cuda runs one evaluation per GPU, so a CUDA worker runs with -c 1, not "
                      f"-c {concurrency}: start one worker per GPU (CUDA_VISIBLE_DEVICES=i, -n cuda<i>@%h)")
    from kernels.targets.cuda import _gpu_info
    gpus = (_gpu_info()[0] or {}).get("gpu_count", 1)
    if gpus > 1 and not os.environ.get("CUDA_VISIBLE_DEVICES"):
        raise Refusal(f"CuPy sees {gpus} GPUs and this worker would put every evaluation on the first: pin it to "
                      f"one with CUDA_VISIBLE_DEVICES=i and start one worker per GPU (docs/deploy.md)")
    return 1


def on_celeryd_init(sender=None, instance=None, conf=None, options=None, **_):
    options = options or {}
    queues = options.get("queues") or [conf.task_default_queue]
    if isinstance(queues, str):
        queues = [q.strip() for q in queues.split(",") if q.strip()]
    try:
        gpus = gpu_concurrency(queues, options.get("concurrency"))
    except Refusal as exc:
        sys.stderr.write(f"\nINT21 worker {sender} refuses to start: {exc}\n")
        sys.stderr.flush()
        raise SystemExit(EX_CONFIG) from None
    if gpus is not None and not options.get("concurrency"):
        conf.worker_concurrency = gpus


def queues_of(consumer) -> list[str]:
    try:
        return sorted(consumer.app.amqp.queues.consume_from)
    except Exception:
        return sorted(q.name for q in getattr(consumer.task_consumer, "queues", []))


def fingerprint(targets_list) -> dict:
    from kernels import targets
    out = {}
    for name in targets_list:
        try:
            out[name] = targets.get(name).fingerprint()
        except Exception as exc:   # a broken toolchain is something to show, not a reason to die
            out[name] = {"error": f"{type(exc).__name__}: {exc}"}
    return out


def on_worker_ready(sender=None, **_):
    if settings.CELERY_EMBEDDED:
        return
    name = sender.hostname
    queues = queues_of(sender)
    concurrency = getattr(getattr(sender, "controller", None), "concurrency", 1) or 1
    _stop.clear()
    beats.start("fleet-heartbeat", lambda: settings.INT21_WORKER_HEARTBEAT_SECONDS, _beat(name, queues, concurrency),
                stop=_stop, first_now=True, log=log, failure=f"fleet heartbeat of {name} failed")


def _beat(name: str, queues: list[str], concurrency: int):
    """The worker's beat: it announces itself (until that succeeds), then beats."""
    from int21web.fleet import services
    announced = False

    def beat():
        nonlocal announced
        if not announced:
            services.worker_announce(name=name, hostname=socket.gethostname(), pid=os.getpid(),
                                     queues=queues, targets=targets_of(queues), concurrency=concurrency,
                                     fingerprint=fingerprint(targets_of(queues)))
            announced = True
        else:
            services.worker_heartbeat(name=name)

    return beat


def on_worker_shutdown(sender=None, **_):
    if settings.CELERY_EMBEDDED:
        return
    _stop.set()
    try:
        from int21web.fleet import services
        services.worker_stopped(name=sender.hostname)
    except Exception:
        log.warning("could not record that %s stopped", getattr(sender, "hostname", "?"), exc_info=True)


def connect() -> None:
    from celery import signals
    signals.celeryd_init.connect(on_celeryd_init, weak=False, dispatch_uid="int21-fleet-init")
    signals.worker_ready.connect(on_worker_ready, weak=False, dispatch_uid="int21-fleet-ready")
    signals.worker_shutdown.connect(on_worker_shutdown, weak=False, dispatch_uid="int21-fleet-shutdown")
