"""`manage.py swarm` as a user runs it: real harness, embedded Celery worker, SQLite file;
and a run whose process is killed with SIGKILL, then resumed."""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# quick timing sessions, as this host's fast floor lets a run ask (tests/conftest.py)
ARGS = ["--workload", "softmax", "--shape", "64x1024", "--population", "4", "--eval-settings", '{"timing_budget_s": 0.25}']


@pytest.fixture
def env(tmp_path):
    e = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL")}
    e["INT21_VAR_DIR"] = str(tmp_path)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=e, check=True, timeout=120)
    return e


def swarm(env, *args, timeout=600):
    return subprocess.run([sys.executable, "manage.py", "swarm", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_swarm_json_reports_the_run(env):
    r = swarm(env, *ARGS, "--budget", "8", "--json")
    assert r.returncode == 0, r.stderr[-3000:]
    data = json.loads(r.stdout)
    assert data["evaluations"] == 8 and data["state"] == "finished"
    assert data["best"]["median_ms"] > 0 and "torch" in data["best"]["speedup"]
    assert len(data["history"]) == 8 and data["history"] == sorted(data["history"])
    assert len(data["allocation"]) == 2 and all(sum(a.values()) == 4 for a in data["allocation"])
    assert "evaluations · best" in r.stderr
    # Before it ended, the run measured its best few again on the worker (fresh sandboxed
    # evaluations) and scored each by the median: the best reported is a confirmed one.
    best = data["best"]
    assert len(best["measurements"]) == 3 and best["score"] == sorted(best["measurements"])[1]
    assert f"confirmed #{best['candidate_id']}:" in r.stderr
    with sqlite3.connect(Path(env["INT21_VAR_DIR"]) / "db.sqlite3") as con:
        rows = con.execute("select candidate_id, round, status, finished_at from runs_remeasurement").fetchall()
    assert len(rows) >= 6 and all(st == "ok" and fin for _, _, st, fin in rows)
    assert {(best["candidate_id"], 1), (best["candidate_id"], 2)} <= {(c, rnd) for c, rnd, _, _ in rows}


def test_a_killed_run_resumes_with_nothing_lost_or_judged_twice(env, tmp_path):
    # (no confirmation round: test_swarm_json_reports_the_run covers it; here it would only add time)
    proc = subprocess.Popen([sys.executable, "manage.py", "swarm", *ARGS, "--budget", "8", "--confirm", "0",
                             "--json"], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    db = tmp_path / "db.sqlite3"
    deadline = time.monotonic() + 300
    evaluated = 0
    while time.monotonic() < deadline and evaluated < 4:
        time.sleep(0.5)
        try:
            with sqlite3.connect(db, timeout=5) as con:
                evaluated = con.execute("select count(*) from runs_candidate where result is not null").fetchone()[0]
        except sqlite3.OperationalError:
            pass
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert 4 <= evaluated < 8
    r = swarm(env, "--resume", "1", "--json")
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads(r.stdout)["evaluations"] == 8
    with sqlite3.connect(db) as con:
        assert con.execute("select count(*) from runs_candidate where result is null").fetchone()[0] == 0
        finished = con.execute("select candidate_id, count(*) from runs_evaluation where finished_at is not null "
                               "group by candidate_id").fetchall()
        assert len(finished) == 8 and all(n == 1 for _, n in finished)
        assert con.execute("select state from runs_run where id = 1").fetchone()[0] == "finished"


def test_with_a_broker_and_no_worker_the_swarm_says_so_instead_of_waiting(env, tmp_path):
    # a broker that is set but served by nobody (a folder broker: no Redis needed)
    env = {**env, "CELERY_BROKER_URL": "filesystem://", "INT21_VAR_DIR": str(tmp_path)}
    r = swarm(env, *ARGS, "--budget", "2", timeout=120)
    assert r.returncode == 2, r.stderr[-2000:]
    assert "no worker serves target.cpu" in r.stderr and "celery -A int21web worker -Q target.cpu" in r.stderr


def test_bad_evaluation_settings_are_refused_with_status_2_and_the_reason(env):
    r = swarm(env, "--workload", "softmax", "--budget", "2", "--eval-settings", "{seeds: 8}", timeout=120)
    assert r.returncode == 2 and "--eval-settings: not JSON" in r.stderr, r.stderr[-2000:]
    r = swarm(env, "--workload", "softmax", "--budget", "2", "--eval-settings", "[8]", timeout=120)
    assert r.returncode == 2 and "--eval-settings: must be a JSON object" in r.stderr, r.stderr[-2000:]
    r = swarm(env, "--workload", "softmax", "--budget", "2", "--eval-settings", '{"seeds": 1}', timeout=120)
    assert r.returncode == 2 and "seeds" in r.stderr and "Traceback" not in r.stderr, r.stderr[-2000:]
