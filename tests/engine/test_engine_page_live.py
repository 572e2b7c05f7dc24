"""The engine page's Jobs table follows an unfinished job in a real browser over real HTTP:
its row changes as the job moves on, without a reload, and once the job has ended the page
is fetched again. The job's progress is written here, at the seam where a worker writes it
(tests/engine/test_engine_jobs.py runs the same jobs on the real workers)."""
import shutil
import threading
from pathlib import Path

import pytest
from django.db import connections

from int21web.ops import models as om
from tests.browser.conftest import CHROMIUM
from tests.web.ops_world import people  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]


@pytest.fixture
def live_server():
    """A live server of this test's own, stopped when it ends (pytest-django's is kept for the
    session, and its thread's database connection then outlives the test database)."""
    from pytest_django.live_server_helper import LiveServer
    server = LiveServer("localhost")
    yield server
    server.stop()


@pytest.fixture
def page(live_server, people):
    if not shutil.which(CHROMIUM) and not Path(CHROMIUM).exists():
        pytest.skip(f"Debian's chromium is not installed at {CHROMIUM} (make test installs it with apt)")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-background-networking"])
        page = browser.new_context().new_page()
        page.set_default_timeout(30_000)
        page.goto(live_server.url + "/accounts/login/")
        page.fill("#id_username", "vic")
        page.fill("#id_password", "int21-demo")
        page.click("button[type=submit]")
        page.wait_for_url(live_server.url + "/")
        yield page
        browser.close()


def orm(fn):
    """``fn()`` in a thread of its own, its database connection closed after it. Playwright's sync
    API runs an event loop in the test's thread, where Django refuses ORM calls (and a context
    switch would open a connection per context that nothing closes)."""
    out = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as exc:   # re-raised in the test's thread
            out["error"] = exc
        finally:
            connections.close_all()
    t = threading.Thread(target=run)
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


def test_a_running_jobs_row_follows_the_job_and_the_page_reloads_when_it_ends(page, live_server, people,
                                                                             mini_engine):
    from kernels.engine import store

    def made():
        engine = om.Engine.objects.create(name="mini", record=store.load("mini"), created_by=people["erin"])
        old = om.EngineJob.objects.create(engine=engine, action="check", state="done", steps=["check:prefill"],
                                          progress={"step": 1, "steps": 1, "what": "done"})
        job = om.EngineJob.objects.create(engine=engine, action="check", state="running",
                                          created_by=people["erin"], steps=["check:prefill", "check:decode"],
                                          progress={"step": 0, "steps": 2, "what": "prefill: judging at every shape"})
        return old, job
    old, job = orm(made)
    page.goto(live_server.url + "/engines/mini/")
    row = page.locator(f"#job-{job.id}")
    assert "running" in row.inner_text() and "0/2 · prefill: judging at every shape" in row.inner_text()
    page.evaluate("window.int21Loaded = true")            # gone once the page is fetched again

    job.progress = {"step": 1, "steps": 2, "what": "decode: judging at every shape"}
    orm(job.save)
    page.wait_for_function(f"document.getElementById('job-{job.id}').textContent"
                           ".includes('1/2 · decode: judging at every shape')")
    assert page.evaluate("window.int21Loaded") is True     # redrawn in place, not reloaded
    assert "done" in page.locator(f"#job-{old.id}").inner_text()

    job.state, job.reason = "failed", "decode: the phase's program did not compile"
    orm(job.save)
    page.wait_for_function(f"document.getElementById('job-{job.id}').dataset.state === 'failed'")
    assert "did not compile" in page.locator(f"#job-{job.id}").inner_text()
    page.wait_for_function("window.int21Loaded === undefined")        # then the page is fetched again
    assert "failed" in page.locator(f"#job-{job.id}").inner_text()
    page.evaluate("window.int21Reloaded = true")
    page.wait_for_timeout(3000)                                        # nothing left live: it stays
    assert page.evaluate("window.int21Reloaded") is True
