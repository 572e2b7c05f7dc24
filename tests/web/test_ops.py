"""Own ops through the web app: the import page (preview, then import), POST /api/workloads,
``manage.py import_op`` and ``manage.py kernelbench``, and the problem's page. One service
underneath all of them; the capture itself runs in kernels.graph's sandbox."""
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from int21web.ops import models as om
from tests.web.ops_world import client_for, people  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db

PROBLEMS = Path(__file__).resolve().parents[1] / "ownops" / "problems"
GELU = (PROBLEMS / "gemm_bias_gelu.py").read_text()
SOFTMAX = (PROBLEMS / "softmax_rows.py").read_text()
SORTS = '''import torch
import torch.nn as nn

batch = 2


class Model(nn.Module):
    def forward(self, x):
        return torch.sort(x.flatten(1), dim=1).values


def get_inputs():
    return [torch.randn(batch, 3, 8, 8)]


def get_init_inputs():
    return []
'''


@pytest.fixture(autouse=True)
def ops_dir(tmp_path, monkeypatch):
    path = tmp_path / "ops"
    path.mkdir()
    path.chmod(0o755)
    tmp_path.chmod(0o755)
    monkeypatch.setenv("INT21_OPS_DIR", str(path))
    return path


def api(c, path, body):
    return c.post(path, json.dumps(body), content_type="application/json")


def test_the_api_imports_a_problem_and_it_becomes_a_workload_like_the_built_ins(people):
    from kernels import workloads
    erin = client_for(people["erin"])
    resp = api(erin, "/api/workloads", {"source": GELU, "name": "gemm_gelu", "shapes": ["batch_size=16"]})
    assert resp.status_code == 201, resp.content
    body = resp.json()
    assert body["name"] == "gemm_gelu" and body["page"] == "/ops/gemm_gelu/"
    assert "gemm_gelu" in workloads.names()
    listed = erin.get("/api/workloads?name=gemm_gelu").json()[0]
    assert listed["name"] == "gemm_gelu" and listed["targets"]["cpu"]["signature"].startswith("void kernel(")
    assert om.ImportedOp.objects.get(name="gemm_gelu").created_by == people["erin"]
    page = erin.get("/ops/gemm_gelu/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "graph-data" in html and "generated kernel" in html.lower() and "matmul" in html
    # a goal can be written for it in the editor (the workload is offered and preselected)
    editor = erin.get("/goals/new/?workload=gemm_gelu").content.decode()
    assert 'value="gemm_gelu" selected' in editor


def test_an_unsupported_op_is_a_400_naming_it_and_nothing_is_stored(people, ops_dir):
    erin = client_for(people["erin"])
    resp = api(erin, "/api/workloads", {"source": SORTS})
    assert resp.status_code == 400
    err = resp.json()
    assert err["field"] == "source" and "sort" in err["error"].lower()
    assert err["failure"]["kind"]
    assert not om.ImportedOp.objects.exists()
    assert not any(ops_dir.iterdir()) or not (ops_dir / "index.json").exists() or \
        "sort" not in (ops_dir / "index.json").read_text()


def test_a_syntax_error_and_an_empty_file_are_400s_with_the_reason(people):
    erin = client_for(people["erin"])
    resp = api(erin, "/api/workloads", {"source": "def broken(:\n"})
    assert resp.status_code == 400 and resp.json()["field"] == "source"
    assert "syntax" in resp.json()["error"].lower() or "line" in resp.json()["error"].lower()
    resp = api(erin, "/api/workloads", {"source": "   "})
    assert resp.status_code == 400 and resp.json()["field"] == "source"
    resp = api(erin, "/api/workloads", {"source": GELU, "shapes": ["batch_size"]})
    assert resp.status_code == 400 and resp.json()["field"] == "shapes"


def test_a_viewer_cannot_import(people):
    resp = api(client_for(people["vic"]), "/api/workloads", {"source": SOFTMAX})
    assert resp.status_code == 403


def test_the_preview_says_what_is_supported_and_stores_nothing(people):
    erin = client_for(people["erin"])
    resp = api(erin, "/api/workloads/preview", {"source": SORTS})
    assert resp.status_code == 200
    body = resp.json()
    assert body["supported"] is False and any(not s["supported"] for s in body["survey"])
    ok = api(erin, "/api/workloads/preview", {"source": SOFTMAX}).json()
    assert ok["supported"] is True and ok["groups"]
    assert not om.ImportedOp.objects.exists()


def test_the_import_page_previews_then_imports(people):
    erin = client_for(people["erin"])
    page = erin.post("/ops/import/", {"source": SOFTMAX, "name": "rows_softmax", "action": "preview"})
    assert page.status_code == 200 and "everything is supported" in page.content.decode()
    assert not om.ImportedOp.objects.exists()
    done = erin.post("/ops/import/", {"source": SOFTMAX, "name": "rows_softmax", "action": "import"})
    assert done.status_code == 302 and done["Location"] == "/ops/rows_softmax/"
    refused = erin.post("/ops/import/", {"source": SORTS, "action": "import"})
    assert refused.status_code == 400 and "Refused" in refused.content.decode()


def test_the_command_line_imports_and_refuses_with_the_apis_messages(people, tmp_path):
    f = tmp_path / "p.py"
    f.write_text(SOFTMAX)
    out = io.StringIO()
    call_command("import_op", str(f), "--name", "cli_softmax", "--json", "--as", "erin", stdout=out)
    assert json.loads(out.getvalue())["name"] == "cli_softmax"
    bad = tmp_path / "sorts.py"
    bad.write_text(SORTS)
    with pytest.raises(CommandError) as err:
        call_command("import_op", str(bad), "--as", "erin", stdout=io.StringIO())
    assert err.value.returncode == 2 and str(err.value).startswith("source: ")


def test_kernelbench_prints_one_json_object_with_the_names_scripts_rely_on(tmp_path):
    """As a user runs it: its own process with the embedded workers (no broker), a SQLite file."""
    folder = tmp_path / "problems"
    folder.mkdir()
    (folder / "softmax_rows.py").write_text(SOFTMAX)
    (folder / "sort_net.py").write_text(SORTS)
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL")}
    env.update(INT21_VAR_DIR=str(tmp_path / "var"), INT21_OPS_DIR=str(tmp_path / "ops"))
    root = Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=root, env=env, check=True, timeout=120)
    # --no-compile: the best kernel's session against torch.compile costs a model compile (the
    # benchmark, bench/ownops, runs it); here speedup_compile is then null.
    r = subprocess.run([sys.executable, "manage.py", "kernelbench", str(folder), "--budget", "2", "--population", "2",
                        "--confirm", "0", "--no-compile", "--json", "--out", str(tmp_path / "kb.json")],
                       cwd=root, env=env, capture_output=True, text=True, timeout=500)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "imported softmax_rows.py" in r.stderr      # the progress bar, on stderr
    report = json.loads(r.stdout)
    rows = {r["name"]: r for r in report["problems"]}
    assert set(report) == {"problems", "summary"}
    for r in rows.values():
        assert set(r) >= {"name", "supported", "reason", "correct", "speedup_eager", "speedup_compile",
                          "evaluations", "minutes"}
    assert rows["sort_net"]["supported"] is False and "sort" in rows["sort_net"]["reason"].lower()
    ok = rows["softmax_rows"]
    assert ok["supported"] and ok["correct"] and ok["evaluations"] >= 1 and ok["speedup_eager"] > 0
    assert ok["speedup_compile"] is None
    assert set(report["summary"]) >= {"fast_0", "fast_1_eager", "fast_1_compile", "geomean_eager"}
    assert report["summary"]["fast_0"] == 1.0
    assert json.loads((tmp_path / "kb.json").read_text())["problems"]


@pytest.mark.django_db
def test_kernelbench_with_a_broker_and_no_worker_says_so_instead_of_waiting(people, tmp_path, settings):
    settings.CELERY_EMBEDDED = False
    (tmp_path / "softmax_rows.py").write_text(SOFTMAX)
    with pytest.raises(CommandError) as err:
        call_command("kernelbench", str(tmp_path), "--budget", "2", stdout=io.StringIO())
    assert err.value.returncode == 2 and "no worker serves target.cpu" in str(err.value)
    assert "celery -A int21web worker -Q target.cpu" in str(err.value)
    assert not om.ImportedOp.objects.exists()       # nothing imported, nothing half done
