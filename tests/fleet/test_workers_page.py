"""The workers page: each worker with its queues and host, live or stale; each target says
whether a live worker serves it (what a run page shows when none does)."""
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, User
from django.test import override_settings
from django.utils import timezone

from int21web.fleet import selectors, services
from int21web.fleet.models import Worker


@pytest.fixture
def viewer(db, client):
    user = User.objects.create_user("vera", password="x")
    user.groups.add(Group.objects.get_or_create(name="viewer")[0])
    client.force_login(user)
    return client


def announce(name, queues, **fp):
    return services.worker_announce(name=name, hostname="rack1", pid=4242, queues=queues,
                                    targets=[q.split(".")[1] for q in queues if q.startswith("target.")],
                                    concurrency=1, fingerprint=fp)


@override_settings(CELERY_EMBEDDED=False)
def test_it_lists_live_and_stale_workers_with_their_hosts(viewer):
    announce("cpu@rack1", ["target.cpu"], cpu={"cpu_model": "EPYC 9654", "cores": 96, "cpu_flags": ["avx512f"],
                                               "compiler": "gcc 12.2"})
    announce("gpu@rack2", ["target.cuda"], cuda={"gpu": "NVIDIA H200", "sm": "sm_90", "gpu_count": 1,
                                                 "driver": "13.0", "runtime": "13.0", "compiler": "nvcc 13.0"})
    Worker.objects.filter(name="gpu@rack2").update(heartbeat_at=timezone.now() - timedelta(minutes=5))
    page = viewer.get("/workers/").content.decode()
    assert "cpu@rack1" in page and "EPYC 9654" in page and "avx512f" in page
    assert "gpu@rack2" in page and "NVIDIA H200 (sm_90, 1 GPU), driver 13.0" in page
    assert page.count(">stale<") == 1 and page.count(">live<") >= 1
    assert "no live worker on target.cuda: the last one, gpu@rack2, was heard from 300 s ago" in page


@override_settings(CELERY_EMBEDDED=False)
def test_live_worker_for_says_why_a_target_waits(db):
    assert not selectors.live_worker_for("cpu")
    assert "no worker serves target.cpu" in selectors.live_worker_for("cpu").reason
    announce("cpu@rack1", ["target.cpu"])
    assert selectors.live_worker_for("cpu") and selectors.live_worker_for("cpu").workers == ["cpu@rack1"]
    services.worker_stopped(name="cpu@rack1")
    assert not selectors.live_worker_for("cpu")
    assert [w["status"] for w in selectors.workers()] == ["stopped"]


def test_a_worker_is_seen_dead_after_three_missed_beats_not_a_minute(db, settings):
    assert settings.INT21_WORKER_HEARTBEAT_SECONDS == 2.0 and settings.INT21_WORKER_STALE_SECONDS == 7.0
    announce("cpu@rack1", ["target.cpu"])
    ago = timezone.now() - timedelta(seconds=settings.INT21_WORKER_HEARTBEAT_SECONDS + 0.5)   # one beat late
    Worker.objects.filter(name="cpu@rack1").update(heartbeat_at=ago)
    assert [w["status"] for w in selectors.workers()] == ["live"]
    Worker.objects.filter(name="cpu@rack1").update(heartbeat_at=timezone.now() - timedelta(seconds=7.5))
    assert [w["status"] for w in selectors.workers()] == ["stale"]
    assert selectors.dead(["cpu@rack1", "unknown@x"]) == {"cpu@rack1": "stale"}


@override_settings(CELERY_EMBEDDED=True)
def test_in_embedded_mode_the_web_process_serves_the_cpu_target(db):
    assert selectors.live_worker_for("cpu").live


def test_anonymous_visitors_are_sent_to_log_in(client, db):
    r = client.get("/workers/")
    assert r.status_code == 302 and "/accounts/login/" in r["Location"]
