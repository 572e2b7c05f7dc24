"""Tests of embedded mode (`make run`: the in-process broker, the workers in threads of the
web process) when the suite runs against a real broker (CI's Redis): run the test again in a
child pytest as `make run` has it — no broker, the same PostgreSQL server, its own database.
(The embedded workers are solo workers in threads; on Redis a task that blocks one of them
for long loses its consumer's connection, which is why production runs prefork workers.)"""
import os
import subprocess
import sys
from pathlib import Path


def elsewhere() -> bool:
    """True when this process's broker is not embedded mode's."""
    from int21web.celery import app
    return not str(app.conf.broker_url).startswith("memory://")


def rerun(test_file: str, test_name: str, database: str, timeout: float) -> None:
    """Run ``test_file::test_name`` in a child pytest in embedded mode; assert it passed."""
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "CELERY_BROKER_URL")}
    if "DATABASE_URL" in env:
        env["DATABASE_URL"] = env["DATABASE_URL"].rsplit("/", 1)[0] + "/" + database
    here = Path(test_file).resolve()
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"{here}::{test_name}"],
                       cwd=Path(__file__).resolve().parents[2], env=env, capture_output=True, text=True,
                       timeout=timeout)
    assert r.returncode == 0 and " passed" in r.stdout, r.stdout[-4000:]
