"""`make run`'s pieces as a user runs them: demo accounts only in embedded mode, and a
server that Ctrl-C stops cleanly, workers included."""
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def env_for(tmp_path, **extra):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL")}
    env.update({"INT21_VAR_DIR": str(tmp_path), "DEBUG": "true", **extra})
    return env


def manage(env, *args, timeout=300):
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_demo_prints_the_accounts_and_is_refused_in_production(tmp_path):
    env = env_for(tmp_path)
    assert manage(env, "migrate", "-v0").returncode == 0
    r = manage(env, "demo", "--no-engine")      # the demo engine: tests/engine (its import is ~30 s)
    assert r.returncode == 0, r.stderr
    assert "int21-demo" in r.stdout and all(role in r.stdout for role in ("admin", "engineer", "reviewer", "viewer"))
    assert "Demo goals created" in r.stdout
    again = manage(env, "demo", "--no-engine")      # idempotent: a second `make run` changes nothing
    assert again.returncode == 0 and "Demo goals created" not in again.stdout
    prod = manage(env_for(tmp_path, DEBUG="false", SECRET_KEY="x" * 60, ALLOWED_HOSTS="example.com"), "demo")
    assert prod.returncode != 0 and "embedded mode" in prod.stderr


def test_ctrl_c_stops_the_server_and_its_workers(tmp_path):
    env = env_for(tmp_path)
    assert manage(env, "migrate", "-v0").returncode == 0
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "manage.py", "serve", "--port", str(port)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/accounts/login/", timeout=2)
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None, proc.stdout.read()
                time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out
    assert "embedded workers" in out and out.rstrip().endswith("stopped")
