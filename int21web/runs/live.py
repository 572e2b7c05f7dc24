"""Waking the browsers that watch a run.

An event is stored first (``DjangoEventSink``), then a wake-up naming its sequence number is
sent to the run's group on the channel layer. Consumers read the events themselves from the
database, after the last one they sent: so a page opened mid-run, a reconnect, or a lost
wake-up all take the same path, and nothing is sent twice or out of order.

Embedded mode's in-memory layer lives on the ASGI server's event loop, and a plain
cross-thread ``async_to_sync`` send into it stalls for seconds; the wake-up is scheduled onto
that loop instead (recorded when the server starts). With Redis any thread may send.
"""
from __future__ import annotations

import asyncio
import logging

from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer

log = logging.getLogger(__name__)
_server_loop: asyncio.AbstractEventLoop | None = None


def group(run_id: int) -> str:
    return f"run.{run_id}"


DASHBOARD = "dashboard"


def remember_server_loop(loop: asyncio.AbstractEventLoop) -> None:
    global _server_loop
    _server_loop = loop


def wake(run_id: int, seq: int, kind: str = "", data: dict | None = None) -> None:
    """Called after the event's transaction commits, from any thread."""
    layer = get_channel_layer()
    if layer is None:
        return
    message = {"type": "run.wake", "seq": seq}
    sends = [(group(run_id), message)]
    if kind in ("run_started", "run_paused", "run_resumed", "run_finished", "generation_finished"):
        sends.append((DASHBOARD, {"type": "dashboard.wake", "run_id": run_id, "kind": kind}))
    try:
        if isinstance(layer, InMemoryChannelLayer):
            loop = _server_loop
            if loop is None or loop.is_closed():
                return   # no server in this process: nobody is listening
            for name, msg in sends:
                loop.call_soon_threadsafe(lambda n=name, mm=msg: loop.create_task(layer.group_send(n, mm)))
        else:
            for name, msg in sends:
                async_to_sync(layer.group_send)(name, msg)
    except Exception:  # a wake-up is an optimisation: consumers also poll the stored events
        log.warning("could not wake the watchers of run %s", run_id, exc_info=True)


def install() -> None:
    """Publish every stored run event to the channel layer (called once at start-up)."""
    from int21web.runs.store import DjangoEventSink
    if wake not in DjangoEventSink.publishers:
        DjangoEventSink.publishers.append(wake)
