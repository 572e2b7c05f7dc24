"""A production-mode stack for tests: its own PostgreSQL database, its own Redis key prefix
and database number, `celery worker` and ASGI server subprocesses, and SQL to look at what
they did. Parallel test runs never see each other's rows or messages.

    with Stack(tmp_path) as s:
        s.worker("cpu1", "target.cpu"); s.worker("orch", "orchestrate")
        run_id = s.launch(budget=8)
        s.wait_finished(run_id)
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from itertools import count
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[2]
CELERY = str(Path(sys.executable).with_name("celery"))
_numbers = count(1)
_template: dict = {}
_static = Path(os.environ.get("TMPDIR", "/tmp")) / f"int21-fleet-static-{os.getpid()}"

# The cheapest evaluation that still goes through every stage: a small softmax, two seeds,
# a short timing budget, no re-check.
# Quick evaluations, as the host's fast floor allows (INT21_EVAL_GOAL_FLOOR=fast below); a goal
# can no longer switch the re-check off.
FAST_EVAL = {"seeds": 2, "min_calls": 5, "max_calls": 30, "timing_budget_s": 0.2}


def services_or_skip():
    """(DATABASE_URL, REDIS_URL) of running services, or pytest.skip with the reason."""
    import pytest
    db, redis_url = os.environ.get("DATABASE_URL"), os.environ.get("REDIS_URL")
    if not db or not db.startswith(("postgres://", "postgresql://")):
        pytest.skip("needs PostgreSQL: set DATABASE_URL=postgres://… (.ci/run does)")
    if not redis_url:
        pytest.skip("needs Redis: set REDIS_URL=redis://… (.ci/run does)")
    try:
        import psycopg
        psycopg.connect(_with_db(db, "postgres"), connect_timeout=3).close()
    except Exception as exc:
        pytest.skip(f"PostgreSQL at DATABASE_URL does not answer: {exc}")
    try:
        import redis
        redis.Redis.from_url(redis_url, socket_timeout=3).ping()
    except Exception as exc:
        pytest.skip(f"Redis at REDIS_URL does not answer: {exc}")
    return db, redis_url


def _with_db(url: str, name: str) -> str:
    u = urlsplit(url)
    return urlunsplit((u.scheme, u.netloc, "/" + name, u.query, u.fragment))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Stack:
    def __init__(self, tmp_path: Path, *, redis_url: str | None = None, env: dict | None = None):
        base_db, base_redis = services_or_skip()
        self.tmp = tmp_path
        self.base_db = base_db
        self.db_name = f"int21_fleet_{os.getpid()}_{next(_numbers)}"
        redis_db = os.environ.get("INT21_TEST_REDIS_DB", "9")
        self.redis_url = redis_url or _with_db(base_redis, redis_db)
        self.prefix = f"int21test{os.getpid()}x{self.db_name.rsplit('_', 1)[1]}:"
        self.procs: dict[str, subprocess.Popen] = {}
        self.python = sys.executable
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("INT21_", "CELERY_", "PYTEST"))}
        self.env.update({
            "DATABASE_URL": _with_db(base_db, self.db_name), "DATABASE_POOL": "false",
            "REDIS_URL": self.redis_url, "INT21_REDIS_PREFIX": self.prefix,
            "DEBUG": "false", "SECRET_KEY": "fleet-tests-" + "x" * 50, "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "SECURE_SSL_REDIRECT": "false", "INT21_VAR_DIR": str(tmp_path / "var"), "INT21_STATIC_ROOT": str(_static),
            "INT21_CACHE_DIR": os.environ.get("INT21_CACHE_DIR", str(tmp_path / "cache")),
            # short beats, so a vanished worker is noticed in seconds rather than a minute
            "INT21_EVAL_HEARTBEAT": "0.5", "INT21_EVAL_STALE": "6", "INT21_DRIVE_LEASE": "6",
            "INT21_RECOVER_EVERY": "2", "INT21_WORKER_HEARTBEAT": "1", "INT21_WORKER_STALE": "5",
            "PYTHONUNBUFFERED": "1", "LOG_LEVEL": "WARNING", "INT21_EVAL_GOAL_FLOOR": "fast",
        })
        self.env.update(env or {})
        self._create_database()

    # ------------------------------------------------------------------ database

    def _admin(self):
        import psycopg
        return psycopg.connect(_with_db(self.base_db, "postgres"), autocommit=True)

    def _create_database(self):
        """From a migrated template made once per test session (migrations take seconds)."""
        key = "template"
        if key not in _template:
            tpl = f"int21_fleet_tpl_{os.getpid()}"
            with self._admin() as con:
                con.execute(f'DROP DATABASE IF EXISTS "{tpl}" WITH (FORCE)')
                con.execute(f'CREATE DATABASE "{tpl}"')
            r = subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT,
                               env={**self.env, "DATABASE_URL": _with_db(self.base_db, tpl)},
                               capture_output=True, text=True, timeout=300)
            assert r.returncode == 0, r.stderr[-3000:]
            _template[key] = tpl
        with self._admin() as con:
            con.execute(f'CREATE DATABASE "{self.db_name}" TEMPLATE "{_template[key]}"')

    def collectstatic(self) -> None:
        """Production pages need the hashed static files (WhiteNoise serves them): once a session."""
        if not (_static / "staticfiles.json").exists():
            self.manage("collectstatic", "--noinput", "-v0", timeout=300)

    def sql(self, query: str, *args) -> list[tuple]:
        import psycopg
        with psycopg.connect(self.env["DATABASE_URL"], autocommit=True) as con:
            cur = con.execute(query, args)
            return cur.fetchall() if cur.description else []

    # ------------------------------------------------------------------ processes

    def start(self, name: str, argv: list[str], **extra_env) -> subprocess.Popen:
        log = open(self.tmp / f"{name}.log", "ab")
        p = subprocess.Popen(argv, cwd=ROOT, env={**self.env, **extra_env}, stdout=log, stderr=subprocess.STDOUT,
                             start_new_session=True)
        self.procs[name] = p
        return p

    def worker(self, name: str, queues: str, concurrency: int = 1, **extra_env) -> subprocess.Popen:
        return self.start(name, [CELERY, "-A", "int21web", "worker", "-Q", queues, "-n", f"{name}@%h",
                                 "-c", str(concurrency), "--without-gossip", "--without-mingle",
                                 "--without-heartbeat", "-l", "INFO"], **extra_env)

    def node(self, name: str) -> str:
        return f"{name}@{socket.gethostname()}"

    def wait_workers(self, *names: str, timeout: float = 90) -> None:
        """Until each worker has announced itself in the fleet registry (it is consuming then)."""
        want = {self.node(n) for n in names}
        self.wait(lambda: want <= {r[0] for r in self.sql("select name from fleet_worker where stopped_at is null")},
                  timeout, f"workers {sorted(want)} to announce themselves", names)

    def kill(self, name: str, sig=signal.SIGKILL) -> None:
        p = self.procs[name]
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            pass
        p.wait(timeout=30)

    def stop(self, name: str, timeout: float = 20) -> None:
        p = self.procs.get(name)
        if p is None or p.poll() is not None:
            return
        try:
            os.killpg(p.pid, signal.SIGTERM)
            p.wait(timeout=timeout)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            self.kill(name)

    def log(self, name: str) -> str:
        path = self.tmp / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def logs(self, names=None) -> str:
        return "\n".join(f"----- {n}\n{self.log(n)[-4000:]}" for n in (names or self.procs))

    def manage(self, *args, timeout: float = 120) -> str:
        r = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=self.env, capture_output=True,
                           text=True, timeout=timeout)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
        return r.stdout

    def shell(self, code: str, timeout: float = 120) -> str:
        return self.manage("shell", "-c", code, timeout=timeout).strip()

    # ------------------------------------------------------------------ runs

    def launch(self, *, budget: int = 8, population: int = 4, seed: int = 0, eval_settings: dict | None = None,
               shape: str = "64x1024") -> int:
        spec = {"workload": "softmax", "target": "cpu", "shapes": [shape], "population": population, "seed": seed,
                "cold": True, "team": ["explorer", "mutator"],
                "budget": {"evaluations": budget, "stagnation_generations": 0},
                "eval_settings": eval_settings or FAST_EVAL}
        out = self.shell("import json\nfrom int21web.runs import models as m, services\n"
                         f"g = m.Goal.objects.create(name='fleet test', spec=json.loads({json.dumps(spec)!r}))\n"
                         "print(services.run_launch(goal_row=g))")
        return int(out.splitlines()[-1])

    def dispatch(self, run_id: int) -> None:
        self.shell(f"from int21web.runs import services; services.run_dispatch(run_id={run_id})")

    def run_state(self, run_id: int) -> str:
        return self.sql("select state from runs_run where id = %s", run_id)[0][0]

    def wait_finished(self, run_id: int, timeout: float = 180, watch=()) -> None:
        self.wait(lambda: self.run_state(run_id) == "finished", timeout, f"run {run_id} to finish", watch)

    def wait(self, ok, timeout: float, what: str, watch=()) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if ok():
                return
            for n in watch:
                p = self.procs.get(n)
                if p is not None and p.poll() is not None:
                    raise AssertionError(f"{n} exited ({p.returncode}) while waiting for {what}\n{self.logs()}")
            time.sleep(0.2)
        raise AssertionError(f"timed out waiting for {what}\n{self.logs()}")

    def finished_evaluations(self, run_id: int) -> list[tuple]:
        """(candidate, attempt, worker) of every evaluation that counted."""
        return self.sql("select e.candidate_id, e.attempt, e.worker from runs_evaluation e join runs_candidate c "
                        "on c.id = e.candidate_id where c.run_id = %s and e.finished_at is not null "
                        "order by e.candidate_id", run_id)

    def events(self, run_id: int, kind: str | None = None) -> list[tuple]:
        rows = self.sql("select seq, kind, data from runs_event where run_id = %s order by seq", run_id)
        return [r for r in rows if kind is None or r[1] == kind]

    def assert_each_candidate_evaluated_once(self, run_id: int, budget: int) -> list[tuple]:
        cands = [r[0] for r in self.sql("select id from runs_candidate where run_id = %s order by id", run_id)]
        unjudged = self.sql("select id from runs_candidate where run_id = %s and result is null", run_id)
        done = self.finished_evaluations(run_id)
        per = {}
        for cid, _attempt, _worker in done:
            per[cid] = per.get(cid, 0) + 1
        assert len(cands) == budget, f"{len(cands)} candidates for a budget of {budget}"
        assert not unjudged, f"candidates without a result: {unjudged}"
        assert per == {c: 1 for c in cands}, f"finished evaluations per candidate: {per}"
        evaluated = [d["candidate_id"] for _, _, d in self.events(run_id, "candidate_evaluated")]
        assert sorted(evaluated) == cands, "each candidate_evaluated event exactly once"
        return done

    # ------------------------------------------------------------------ cleanup

    def close(self) -> None:
        for name in list(self.procs):
            self.stop(name, timeout=10)
        try:
            import redis
            client = redis.Redis.from_url(self.redis_url, socket_timeout=3)
            keys = list(client.scan_iter(f"{self.prefix}*", count=1000))
            if keys:
                client.delete(*keys)
        except Exception:
            pass
        try:
            with self._admin() as con:
                con.execute(f'DROP DATABASE IF EXISTS "{self.db_name}" WITH (FORCE)')
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def drop_template() -> None:
    import shutil
    shutil.rmtree(_static, ignore_errors=True)
    if "template" in _template:
        import psycopg
        db = os.environ["DATABASE_URL"]
        with psycopg.connect(_with_db(db, "postgres"), autocommit=True) as con:
            con.execute(f'DROP DATABASE IF EXISTS "{_template.pop("template")}" WITH (FORCE)')
