"""Live-update latency of the run page (not a test), embedded mode, with a real browser.

    python -m bench live-latency [--candidates 200] [--burst 500] [--burst-seconds 5]

The web app is served by uvicorn in this process, exactly as `manage.py serve` does (ASGI
app, lifespan hook, in-memory channel layer). A thread of the same process plays the part
of the embedded worker: for each candidate it commits a ``candidate_evaluated`` event
through the real ``DjangoEventSink`` (stored, then a wake-up scheduled onto the server's
loop), and records the wall-clock time of the commit. Debian's Chromium, driven by
Playwright, has the run page open; a MutationObserver records when each candidate's row
shows its result. Latency = row shown − commit, on one machine and one clock.

Then a burst: ``--burst`` events in ``--burst-seconds``; the page must receive all of them,
in order, none twice. Writes bench/results/live-latency-<date>.json.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for var in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL"):
    os.environ.pop(var, None)            # embedded mode: SQLite, in-memory layer
os.environ.setdefault("INT21_VAR_DIR", tempfile.mkdtemp(prefix="int21-latency-"))
os.environ["DEBUG"] = "true"
# Playwright's sync API keeps an event loop in this thread; the ORM calls here are plain blocking
# calls made between browser steps, never from inside a coroutine.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "int21web.settings")

import django  # noqa: E402

django.setup()

from django.contrib.auth.models import Group, User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import transaction  # noqa: E402

from int21web.runs import models as m  # noqa: E402
from int21web.runs.store import DjangoEventSink  # noqa: E402
from swarm.events import make_event  # noqa: E402

CHROMIUM = os.environ.get("INT21_CHROMIUM", "/usr/bin/chromium")


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, max(0, round(q / 100 * (len(values) - 1))))]


def serve(port: int):
    import uvicorn
    config = uvicorn.Config("int21web.asgi:application", host="127.0.0.1", port=port, lifespan="on",
                            log_level="warning", ws="websockets-sansio")
    server = uvicorn.Server(config)
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    return server


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(prog="python -m bench live-latency", description=__doc__.split("\n\n")[0])
    ap.add_argument("--candidates", type=int, default=200)
    ap.add_argument("--burst", type=int, default=500)
    ap.add_argument("--burst-seconds", type=float, default=5.0)
    ap.add_argument("--gap", type=float, default=0.05, help="seconds between two candidates' commits")
    args = ap.parse_args(argv)

    call_command("migrate", verbosity=0)
    group, _ = Group.objects.get_or_create(name="viewer")
    user, _ = User.objects.get_or_create(username="watcher")
    user.set_password("int21-demo")
    user.save()
    user.groups.add(group)
    run = m.Run.objects.create(spec={"workload": "softmax", "target": "cpu", "team": ["explorer"],
                                     "budget": {"evaluations": args.candidates}}, state="running")
    sink = DjangoEventSink()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = serve(port)
    url = f"http://127.0.0.1:{port}"

    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-background-networking"])
        page = browser.new_page()
        page.goto(url + "/accounts/login/")
        page.fill("#id_username", "watcher")
        page.fill("#id_password", "int21-demo")
        page.click("button[type=submit]")
        page.wait_for_url(url + "/")
        page.goto(f"{url}/runs/{run.id}/")
        page.wait_for_function("document.getElementById('live-status').textContent === 'live'")
        page.evaluate("""() => {
            window.shownAt = {};
            new MutationObserver(muts => { for (const mu of muts) {
                const tr = mu.target.closest && mu.target.closest('tr');
                if (tr && tr.dataset.status && tr.dataset.status !== 'proposed' && !(tr.id in window.shownAt))
                    window.shownAt[tr.id] = performance.timeOrigin + performance.now();
            }}).observe(document.querySelector('#candidates tbody'), {subtree: true, attributes: true, childList: true});
        }""")

        committed = {}
        print(f"latency: {args.candidates} candidates, one every {args.gap * 1000:.0f} ms", file=sys.stderr)
        for i in range(args.candidates):
            cid = 1_000_000 + i
            sink.emit(run.id, make_event("candidate_proposed", candidate_id=cid, generation=i // 8, agent="explorer",
                                         rationale="latency probe", params={"VEC": 8}, parents=[]))
            with transaction.atomic():
                # registered first, so it runs first once COMMIT returns: the instant the
                # evaluation is durable, before the wake-up is scheduled
                transaction.on_commit(lambda k=f"cand-{cid}": committed.__setitem__(k, time.time() * 1000))
                sink.emit(run.id, make_event("candidate_evaluated", candidate_id=cid, generation=i // 8,
                                             agent="explorer", status="ok", reason="probe", score=1.0 + i / 1000,
                                             speedup={"numpy": 1.0 + i / 1000}, median_ms=1.0, stages={}))
            time.sleep(args.gap)
        page.wait_for_function(f"Object.keys(window.shownAt).length >= {args.candidates}", timeout=120_000)
        shown = page.evaluate("window.shownAt")
        lat = [shown[k] - committed[k] for k in committed]

        print(f"burst: {args.burst} events in {args.burst_seconds} s", file=sys.stderr)
        before = page.evaluate("window.int21Run.lastSeq")
        t0 = time.monotonic()
        for i in range(args.burst):
            sink.emit(run.id, make_event("agent_note", agent="explorer", text=f"burst {i}"))
            delay = t0 + (i + 1) * args.burst_seconds / args.burst - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        sent = time.monotonic() - t0
        last = m.Run.objects.get(pk=run.id).event_seq
        page.wait_for_function(f"window.int21Run.lastSeq >= {last}", timeout=60_000)
        drained = time.monotonic() - t0
        state = page.evaluate("({received: window.int21Run.received, duplicates: window.int21Run.duplicates, "
                              "outOfOrder: window.int21Run.outOfOrder, lastSeq: window.int21Run.lastSeq})")
        browser.close()
    server.should_exit = True

    result = {
        "what": "run page live-update latency, embedded mode (uvicorn + in-memory channel layer), Chromium",
        "command": " ".join(["python -m bench live-latency", *argv]),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "host": socket.gethostname(),
        "latency_ms": {"n": len(lat), "p50": round(statistics.median(lat), 1), "p95": round(pct(lat, 95), 1),
                       "max": round(max(lat), 1), "min": round(min(lat), 1)},
        "target_p95_ms": 250, "p95_met": pct(lat, 95) <= 250,
        "burst": {"events": args.burst, "sent_in_s": round(sent, 2), "all_shown_after_s": round(drained, 2),
                  "events_on_page": state["lastSeq"] - before, "duplicates": state["duplicates"],
                  "out_of_order": state["outOfOrder"],
                  "complete_and_in_order": state["lastSeq"] - before == args.burst and state["duplicates"] == 0
                  and state["outOfOrder"] == 0},
    }
    out = ROOT / "bench" / "results" / f"live-latency-{datetime.now(timezone.utc):%Y%m%d-%H%M}.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    print(f"written to {out.relative_to(ROOT)}", file=sys.stderr)
    return 0

