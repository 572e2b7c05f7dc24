"""Soft time limit < hard time limit < broker visibility timeout, checked at start-up: a
message is never handed to a second worker while the first may still be running it."""
import os
import subprocess
import sys
from pathlib import Path

from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]


def test_soft_limit_is_below_hard_limit_below_visibility_timeout():
    assert 0 < settings.CELERY_TASK_SOFT_TIME_LIMIT < settings.CELERY_TASK_TIME_LIMIT \
        < settings.CELERY_BROKER_VISIBILITY_TIMEOUT
    if not settings.CELERY_EMBEDDED and settings.CELERY_BROKER_URL.startswith("redis"):
        assert settings.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"] == settings.CELERY_BROKER_VISIBILITY_TIMEOUT
    assert settings.INT21_DRIVE_SLICE_SECONDS < settings.CELERY_TASK_SOFT_TIME_LIMIT
    assert settings.INT21_EVAL_HEARTBEAT_SECONDS < settings.INT21_EVAL_STALE_SECONDS


def test_the_delivery_settings_are_json_only_late_acks_prefetch_one():
    assert settings.CELERY_ACCEPT_CONTENT == ["json"] and settings.CELERY_TASK_SERIALIZER == "json"
    assert settings.CELERY_TASK_ACKS_LATE and settings.CELERY_TASK_REJECT_ON_WORKER_LOST
    assert settings.CELERY_WORKER_PREFETCH_MULTIPLIER == 1
    assert settings.CELERY_TASK_ROUTES["runs.drive_run"] == {"queue": "orchestrate"}


def check(**env):
    full = {k: v for k, v in os.environ.items() if not k.startswith("INT21_")}
    full.update(env)
    return subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=full, capture_output=True,
                          text=True, timeout=120)


def test_a_hard_limit_past_the_visibility_timeout_stops_start_up():
    r = check(INT21_EVAL_HARD_LIMIT="5000")
    assert r.returncode != 0
    assert "INT21_EVAL_SOFT_LIMIT < INT21_EVAL_HARD_LIMIT < INT21_BROKER_VISIBILITY_TIMEOUT, got 1800 / 5000 / 3900" \
        in r.stderr


def test_a_soft_limit_past_the_hard_limit_stops_start_up():
    r = check(INT21_EVAL_SOFT_LIMIT="2400", INT21_EVAL_HARD_LIMIT="2400")
    assert r.returncode != 0 and "INT21_EVAL_SOFT_LIMIT < INT21_EVAL_HARD_LIMIT" in r.stderr


def test_a_worker_stale_window_of_fewer_than_two_beats_stops_start_up():
    r = check(INT21_WORKER_HEARTBEAT="5", INT21_WORKER_STALE="7")
    assert r.returncode != 0
    assert "INT21_WORKER_STALE must be more than two INT21_WORKER_HEARTBEAT periods, got 5 / 7" in r.stderr
