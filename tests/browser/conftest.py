"""Browser tests: Playwright driving Debian's Chromium against a real `manage.py serve`
(uvicorn, embedded workers, its own SQLite file) over real HTTP and websockets."""
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("INT21_CHROMIUM", "/usr/bin/chromium")
SCREENSHOTS = ROOT / "docs" / "screenshots"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def embedded_env(var_dir: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL")}
    env.update(INT21_VAR_DIR=str(var_dir), DEBUG="true", PYTHONUNBUFFERED="1")
    return env


def launch(var: Path, **extra_env) -> dict:
    """migrate, demo, then `manage.py serve` on a free port; returns url/var/env/proc."""
    env = {**embedded_env(var), **extra_env}
    for cmd in (["migrate", "-v0"], ["demo", "--quiet", "--no-engine"]):
        subprocess.run([sys.executable, "manage.py", *cmd], cwd=ROOT, env=env, check=True, timeout=300)
    port = free_port()
    log = open(var / "serve.log", "w")
    # faulty_manage.py: manage.py plus one injected driver fault, for goals with seed 666 only
    proc = subprocess.Popen([sys.executable, "tests/browser/faulty_manage.py", "serve", "--port", str(port)], cwd=ROOT, env=env,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url + "/accounts/login/", timeout=2)
            break
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(f"the server exited: {(var / 'serve.log').read_text()[-3000:]}")
            time.sleep(0.3)
    else:
        raise RuntimeError("the server did not answer within 60 s")
    return {"url": url, "var": var, "env": env, "proc": proc}


def stop(server: dict) -> None:
    server["proc"].terminate()
    try:
        server["proc"].wait(timeout=90)
    except subprocess.TimeoutExpired:
        server["proc"].kill()


def need_chromium():
    if not shutil.which(CHROMIUM) and not Path(CHROMIUM).exists():
        pytest.skip(f"Debian's chromium is not installed at {CHROMIUM} (make test installs it with apt)")


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    """The app as `make run` starts it, on a free port."""
    need_chromium()
    s = launch(tmp_path_factory.mktemp("int21-browser"))
    yield s
    stop(s)


@pytest.fixture(scope="session")
def chromium():
    need_chromium()
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                              args=["--no-sandbox", "--disable-background-networking"])
        yield b
        b.close()


@pytest.fixture(scope="session")
def browser(server, chromium):
    return chromium


def signer(browser, server, contexts):
    def sign_in(username):
        ctx = browser.new_context(viewport={"width": 1360, "height": 900})
        contexts.append(ctx)
        page = ctx.new_page()
        page.set_default_timeout(30_000)
        page.goto(server["url"] + "/accounts/login/")
        page.fill("#id_username", username)
        page.fill("#id_password", "int21-demo")
        page.click("button[type=submit]")
        page.wait_for_url(server["url"] + "/")
        return page
    return sign_in


@pytest.fixture
def login(browser, server):
    """login("engineer") → a page signed in as that demo user (a fresh browser context each)."""
    contexts = []
    yield signer(browser, server, contexts)
    for ctx in contexts:
        ctx.close()


def shot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)
