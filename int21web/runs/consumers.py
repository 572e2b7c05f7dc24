"""One websocket per run: ``/ws/runs/<id>/?after=<seq>``.

On connect the consumer sends every stored event after ``after`` (0: all), then each new one
as it is stored, in sequence order, each exactly once. Clients may also send
``{"action": "pause" | "resume" | "stop"}`` (engineers only) and ``{"after": N}`` to resync.
Anonymous sockets are refused (close code 4401), users without a role too (4403), unknown
runs with 4404. Beside the events (each with its ``seq``), a client that asks (``&workers=1``,
as the run page does) is sent ``{"workers": {"live": bool, "reason": str}}`` on connect and
whenever the run's target
gains or loses its last live worker (checked every poll), so an open page stops showing a
run as progressing within seconds of its worker dying (the fleet's INT21_WORKER_STALE).
"""
from __future__ import annotations

import asyncio

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from int21web.accounts.roles import RoleError, has_role
from int21web.runs import live
from int21web.runs import models as m
from int21web.runs import services

POLL_SECONDS = 2.0      # a safety net: wake-ups normally arrive within milliseconds
BATCH = 500


class RunConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self):
        live.remember_server_loop(asyncio.get_running_loop())
        self.user = self.scope.get("user")
        self.run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        if self.user is None or not self.user.is_authenticated:
            await self.close(code=4401)
            return
        if not await database_sync_to_async(has_role)(self.user, "viewer"):
            await self.close(code=4403)
            return
        if not await database_sync_to_async(m.Run.objects.filter(pk=self.run_id).exists)():
            await self.close(code=4404)
            return
        self.last_seq = _after(self.scope.get("query_string", b""))
        self.lock = asyncio.Lock()
        await self.channel_layer.group_add(live.group(self.run_id), self.channel_name)
        await self.accept()
        self.target = await _target(self.run_id) if _flag(self.scope.get("query_string", b""), "workers") else None
        self.workers = None
        await self.send_workers()
        await self.send_missed()
        self.poller = asyncio.ensure_future(self._poll())

    async def disconnect(self, code):
        if hasattr(self, "poller"):
            self.poller.cancel()
        if hasattr(self, "lock"):
            await self.channel_layer.group_discard(live.group(self.run_id), self.channel_name)

    async def run_wake(self, message):
        if message.get("seq", 0) > self.last_seq:
            await self.send_missed()

    async def _poll(self):
        while True:
            await asyncio.sleep(POLL_SECONDS)
            await self.send_workers()
            await self.send_missed()

    async def send_workers(self):
        if self.target is None:
            return
        now = await _workers(self.target)
        if now is not None and now != self.workers:
            self.workers = now
            await self.send_json({"workers": now})

    async def send_missed(self):
        async with self.lock:
            while True:
                rows = await _events_after(self.run_id, self.last_seq)
                for seq, kind, data, at in rows:
                    await self.send_json({"seq": seq, "kind": kind, "data": data, "at": at})
                    self.last_seq = seq
                if len(rows) < BATCH:
                    return

    async def receive_json(self, content, **kwargs):
        if "after" in content:
            try:
                self.last_seq = max(0, int(content["after"]))
            except (TypeError, ValueError):
                await self.send_json({"error": "after: must be a whole number"})
                return
            await self.send_missed()
            return
        try:
            await database_sync_to_async(services.run_control)(run_id=self.run_id, action=content.get("action"),
                                                               user=self.user)
        except (RoleError, ValueError) as exc:
            await self.send_json({"error": str(exc)})


@database_sync_to_async
def _events_after(run_id: int, after: int):
    return [(e.seq, e.kind, e.data, e.created_at.isoformat())
            for e in m.Event.objects.filter(run_id=run_id, seq__gt=after).order_by("seq")[:BATCH]]


@database_sync_to_async
def _target(run_id: int) -> str:
    return (m.Run.objects.filter(pk=run_id).values_list("spec", flat=True).first() or {}).get("target", "cpu")


@database_sync_to_async
def _workers(target: str) -> dict | None:
    try:
        from int21web.fleet.selectors import live_worker_for   # the fleet registry, where installed
    except ImportError:
        return None
    av = live_worker_for(target)
    return {"live": av.live, "reason": av.reason}


def _flag(query: bytes, name: str) -> bool:
    from urllib.parse import parse_qs
    return parse_qs(query.decode()).get(name, ["0"])[0] == "1"


def _after(query: bytes) -> int:
    from urllib.parse import parse_qs
    try:
        return max(0, int(parse_qs(query.decode()).get("after", ["0"])[0]))
    except ValueError:
        return 0

