"""The Procfile's production stack (what `make prod` starts after migrate + collectstatic),
under honcho: the web server answers, the orchestrate and CPU workers announce themselves, a
run launched through the services finishes, and one signal stops everything cleanly."""
import signal
import sys
import urllib.request
from pathlib import Path

from fleet_stack import ROOT, free_port


def test_the_procfile_runs_a_whole_production_stack(stack):
    stack.collectstatic()
    port = free_port()
    honcho = str(Path(sys.executable).with_name("honcho"))
    p = stack.start("honcho", [honcho, "start", "-f", str(ROOT / "Procfile"), "-p", str(port)],
                    ORCHESTRATE_CONCURRENCY="2")
    stack.wait_workers("orchestrate", "cpu", timeout=120)
    stack.wait(lambda: _answers(port), 60, "the web server", ["honcho"])

    run_id = stack.launch(budget=4, population=2)
    stack.wait_finished(run_id, watch=["honcho"])
    stack.assert_each_candidate_evaluated_once(run_id, budget=4)

    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=60) in (0, -signal.SIGTERM, 143), stack.log("honcho")[-3000:]
    stopped = stack.sql("select name from fleet_worker where stopped_at is not null")
    assert {r[0] for r in stopped} == {stack.node("orchestrate"), stack.node("cpu")}


def _answers(port: int) -> bool:
    try:
        page = urllib.request.urlopen(f"http://127.0.0.1:{port}/accounts/login/", timeout=2).read().decode()
        return "/static/css/app." in page
    except Exception:
        return False
