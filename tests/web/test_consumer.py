"""The run websocket through Channels' WebsocketCommunicator: auth required, one group per
run, replay from sequence N, wake-ups, and controls limited to engineers. The channel layer
is whatever the settings give: Redis in CI (REDIS_URL), in-memory otherwise."""
import asyncio

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from channels.routing import URLRouter

from int21web.asgi import application, websocket_urls
from int21web.runs import models as m
from int21web.runs.store import DjangoEventSink
from swarm.events import make_event

pytestmark = pytest.mark.django_db(transaction=True)


def make_run(**kw):
    return m.Run.objects.create(spec={"workload": "softmax", "target": "cpu", "team": ["explorer"],
                                      "budget": {"evaluations": 4}}, state="running", **kw)


def emit(run_id, n, start=0):
    sink = DjangoEventSink()
    for i in range(n):
        sink.emit(run_id, make_event("agent_note", agent="explorer", text=f"note {start + i}"))


def connect(user, run_id, after=0):
    comm = WebsocketCommunicator(URLRouter(websocket_urls), f"/ws/runs/{run_id}/?after={after}")
    comm.scope["user"] = user
    return comm


async def receive_all(comm, n, timeout=5):
    return [await comm.receive_json_from(timeout=timeout) for _ in range(n)]


def run_async(coro):
    return asyncio.run(coro)


def test_anonymous_sockets_are_refused_through_the_real_stack(db):
    run = make_run()

    async def go():
        comm = WebsocketCommunicator(application, f"/ws/runs/{run.id}/", headers=[(b"origin", b"http://127.0.0.1")])
        connected, code = await comm.connect()
        assert not connected and code == 4401
    run_async(go())


def test_a_user_without_a_role_is_refused_and_an_unknown_run_is_404(users):
    from django.contrib.auth.models import User
    nobody = User.objects.create_user("nobody", password="x")
    run = make_run()

    async def go():
        connected, code = await connect(nobody, run.id).connect()
        assert not connected and code == 4403
        connected, code = await connect(users["viewer"], 999999).connect()
        assert not connected and code == 4404
    run_async(go())


def test_replay_from_sequence_n_then_live_events_in_order_exactly_once(users):
    run = make_run()
    emit(run.id, 10)

    async def go():
        comm = connect(users["viewer"], run.id, after=4)
        connected, _ = await comm.connect()
        assert connected
        first = await receive_all(comm, 6)
        assert [e["seq"] for e in first] == [5, 6, 7, 8, 9, 10]
        await database_sync_to_async(emit)(run.id, 5, start=10)
        live = await receive_all(comm, 5)
        assert [e["seq"] for e in live] == [11, 12, 13, 14, 15]
        assert [e["data"]["text"] for e in live] == [f"note {i}" for i in range(10, 15)]
        assert await comm.receive_nothing(timeout=0.5)
        # a client that lost track asks again from a sequence number
        await comm.send_json_to({"after": 13})
        again = await receive_all(comm, 2)
        assert [e["seq"] for e in again] == [14, 15]
        await comm.disconnect()
    run_async(go())


def test_each_run_has_its_own_group(users):
    a, b = make_run(), make_run()

    async def go():
        ca, cb = connect(users["viewer"], a.id), connect(users["viewer"], b.id)
        assert (await ca.connect())[0] and (await cb.connect())[0]
        await database_sync_to_async(emit)(b.id, 3)
        got = await receive_all(cb, 3)
        assert all(e["kind"] == "agent_note" for e in got)
        assert await ca.receive_nothing(timeout=0.5)
        await ca.disconnect()
        await cb.disconnect()
    run_async(go())


def test_a_viewer_cannot_pause_a_run_but_an_engineer_can(users):
    run = make_run()

    async def go():
        viewer = connect(users["viewer"], run.id)
        assert (await viewer.connect())[0]
        await viewer.send_json_to({"action": "pause"})
        reply = await viewer.receive_json_from(timeout=5)
        assert "needs the engineer role" in reply["error"]
        assert (await database_sync_to_async(lambda: m.Run.objects.get(pk=run.id).state)()) == "running"
        engineer = connect(users["engineer"], run.id)
        assert (await engineer.connect())[0]
        await engineer.send_json_to({"action": "pause"})
        paused = await engineer.receive_json_from(timeout=5)
        assert paused["kind"] == "run_paused" and "engineer" in paused["data"]["reason"]
        assert (await database_sync_to_async(lambda: m.Run.objects.get(pk=run.id).state)()) == "paused"
        await viewer.disconnect()
        await engineer.disconnect()
    run_async(go())


def test_a_page_that_asks_is_told_when_its_target_loses_and_regains_a_live_worker(users, settings, monkeypatch):
    from django.utils import timezone

    from int21web.fleet import services as fleet
    from int21web.fleet.models import Worker
    from int21web.runs import consumers
    settings.CELERY_EMBEDDED = False
    monkeypatch.setattr(consumers, "POLL_SECONDS", 0.1)
    fleet.worker_announce(name="cpu@rack1", hostname="rack1", pid=1, queues=["target.cpu"], targets=["cpu"],
                          concurrency=1, fingerprint={})
    run = make_run()

    def kill():   # no beat for longer than INT21_WORKER_STALE
        Worker.objects.filter(name="cpu@rack1").update(
            heartbeat_at=timezone.now() - timezone.timedelta(seconds=settings.INT21_WORKER_STALE_SECONDS + 1))

    async def go():
        comm = WebsocketCommunicator(URLRouter(websocket_urls), f"/ws/runs/{run.id}/?workers=1&after=0")
        comm.scope["user"] = users["viewer"]
        connected, _ = await comm.connect()
        assert connected
        assert (await comm.receive_json_from(timeout=5)) == {"workers": {
            "live": True, "reason": "1 live worker(s) on target.cpu: cpu@rack1"}}
        await database_sync_to_async(kill)()
        gone = await comm.receive_json_from(timeout=5)
        assert gone["workers"]["live"] is False and "the last one, cpu@rack1, was heard from" in gone["workers"]["reason"]
        await database_sync_to_async(fleet.worker_heartbeat)(name="cpu@rack1")
        back = await comm.receive_json_from(timeout=5)
        assert back["workers"]["live"] is True
        await comm.disconnect()
    run_async(go())
