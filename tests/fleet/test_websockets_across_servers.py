"""A websocket client on a second web process receives the same events as one on the first:
two ASGI servers (uvicorn, different ports) share the Redis channel layer; the events are
stored by the orchestrate worker (a third process) and each wake-up reaches both servers."""
import json
import threading
import time
from datetime import datetime

from fleet_stack import free_port


def session_for(stack) -> str:
    return stack.shell(
        "from django.contrib.auth.models import Group, User\n"
        "from django.contrib.sessions.backends.db import SessionStore\n"
        "u = User.objects.create_user('alice', password='x')\n"
        "u.groups.add(Group.objects.get_or_create(name='viewer')[0])\n"
        "s = SessionStore(); s['_auth_user_id'] = str(u.pk)\n"
        "s['_auth_user_backend'] = 'django.contrib.auth.backends.ModelBackend'\n"
        "s['_auth_user_hash'] = u.get_session_auth_hash(); s.create(); print(s.session_key)").splitlines()[-1]


def listen(port: int, run_id: int, session: str, out: list, done: threading.Event):
    from websockets.sync.client import connect
    with connect(f"ws://127.0.0.1:{port}/ws/runs/{run_id}/", open_timeout=20,
                 additional_headers={"Cookie": f"sessionid={session}", "Origin": f"http://127.0.0.1:{port}"}) as ws:
        while True:
            msg = json.loads(ws.recv(timeout=120))
            out.append((time.time(), msg))
            if msg.get("kind") == "run_finished":
                done.set()
                return


def wait_http(port: int, timeout: float = 60) -> None:
    """Until the server answers; then its login page links the hashed stylesheet, which the
    server itself serves (WhiteNoise), compressed."""
    import re
    import urllib.request
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            page = urllib.request.urlopen(f"http://127.0.0.1:{port}/accounts/login/", timeout=2).read().decode()
            break
        except Exception:
            time.sleep(0.2)
    else:
        raise AssertionError(f"no web server on port {port}")
    css = re.search(r'href="(/static/css/app\.[0-9a-f]{12}\.css)"', page)
    assert css, "production pages link hashed static files"
    req = urllib.request.Request(f"http://127.0.0.1:{port}{css.group(1)}", headers={"Accept-Encoding": "gzip"})
    with urllib.request.urlopen(req, timeout=5) as r:
        assert r.status == 200 and r.headers.get("Content-Encoding") == "gzip"
        assert "immutable" in r.headers.get("Cache-Control", "")


def test_clients_on_two_web_servers_receive_the_same_events(stack):
    stack.collectstatic()
    ports = [free_port(), free_port()]
    for i, port in enumerate(ports):
        stack.start(f"web{i}", [stack.python, "manage.py", "serve", "--no-worker", "--port", str(port)])
    stack.worker("cpu1", "target.cpu")
    stack.worker("orch", "orchestrate")
    for port in ports:
        wait_http(port)
    stack.wait_workers("cpu1", "orch")
    session = session_for(stack)
    run_id = stack.launch(budget=4, population=2, seed=1)

    received = [[], []]
    finished = [threading.Event(), threading.Event()]
    threads = [threading.Thread(target=listen, args=(port, run_id, session, received[i], finished[i]), daemon=True)
               for i, port in enumerate(ports)]
    for t in threads:
        t.start()
    for ev in finished:
        assert ev.wait(180), stack.logs()

    a, b = ([m for _, m in r] for r in received)
    assert [m["seq"] for m in a] == list(range(1, len(a) + 1)), "in order, each once"
    assert a == b, "both servers sent the same events"
    assert [m["kind"] for m in a].count("candidate_evaluated") == 4
    stored = stack.events(run_id)
    assert [(s, k, d) for s, k, d in stored] == [(m["seq"], m["kind"], m["data"]) for m in a]

    # Live, not polled: events stored after the clients connected arrived through the Redis
    # channel layer's wake-up, well inside the consumers' 2 s safety-net poll.
    for r in received:
        lags = sorted(t - datetime.fromisoformat(m["at"]).timestamp() for t, m in r if m["kind"] == "candidate_evaluated")
        assert lags[len(lags) // 2] < 1.0, lags
