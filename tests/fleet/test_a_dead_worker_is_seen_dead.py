"""A worker that dies is seen dead within seconds, at the product's own beat (not the stack's
short test beats): killed with SIGKILL, the registry calls it stale within its heartbeat plus
INT21_WORKER_STALE, and its target says no live worker serves it; stopped cleanly, it says so
itself at once."""
import subprocess
import time

from django.conf import settings

from fleet_stack import ROOT, Stack

BOUND = settings.INT21_WORKER_HEARTBEAT_SECONDS + settings.INT21_WORKER_STALE_SECONDS   # 9 s


def test_a_killed_worker_is_seen_dead_within_seconds_and_a_stopped_one_at_once(tmp_path):
    stack = Stack(tmp_path)
    for name in ("INT21_WORKER_HEARTBEAT", "INT21_WORKER_STALE"):
        stack.env.pop(name)            # the defaults, as deployed
    watcher = None
    try:
        stack.worker("cpu1", "target.cpu")
        stack.worker("cpu2", "target.cpu")
        stack.wait_workers("cpu1", "cpu2")
        victim = stack.node("cpu1")
        time.sleep(2 * settings.INT21_WORKER_HEARTBEAT_SECONDS)   # beating: still fresh
        (age,), = stack.sql("select extract(epoch from now() - heartbeat_at) from fleet_worker where name = %s", victim)
        assert float(age) < settings.INT21_WORKER_STALE_SECONDS
        watcher = subprocess.Popen(   # started before the kill: its own start-up is not in the figure
            [stack.python, "manage.py", "shell", "-c",
             "import time\n"
             "from int21web.fleet import selectors\n"
             "def status():\n"
             f"    return [w['status'] for w in selectors.workers() if w['name'] == {victim!r}]\n"
             "print(status(), flush=True)\n"
             "while status() != ['stale']:\n"
             "    time.sleep(0.1)\n"
             "print(time.time())\n"
             "print(selectors.live_worker_for('cpu').reason)\n"],
            cwd=ROOT, env=stack.env, stdout=subprocess.PIPE, text=True)
        first = watcher.stdout.readline()
        while first and not first.startswith("["):   # the shell's own banner
            first = watcher.stdout.readline()
        assert first.strip() == "['live']"
        killed_at = time.time()
        stack.kill("cpu1")              # SIGKILL: no goodbye
        out, _ = watcher.communicate(timeout=60)
        seen_at, reason = out.strip().splitlines()[-2:]
        print(f"a killed worker was seen dead after {float(seen_at) - killed_at:.1f} s (bound {BOUND:g} s)")
        assert float(seen_at) - killed_at <= BOUND + 1.0, (float(seen_at) - killed_at, out)
        assert "cpu2" in reason     # the survivor serves the target

        stack.stop("cpu2")              # a warm shutdown: the worker says goodbye itself
        assert stack.sql("select stopped_at is not null from fleet_worker where name = %s", stack.node("cpu2")) == [(True,)]
        out = stack.shell("from int21web.fleet import selectors\nprint(selectors.live_worker_for('cpu').reason)")
        assert "no live worker on target.cpu" in out
    finally:
        if watcher is not None and watcher.poll() is None:
            watcher.kill()
        stack.close()
