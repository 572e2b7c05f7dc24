"""Pages that agree with each other and speak the workload's own language: the dashboard's
workers say what the Workers page says, and the constraint hint uses the workload's dims."""
import pytest

from int21web.fleet.selectors import live_worker_for
from kernels import targets

pytestmark = pytest.mark.django_db


def test_the_dashboard_says_which_targets_are_served_as_the_workers_page_does(as_role, settings):
    settings.CELERY_EMBEDDED = True
    client = as_role("viewer")
    dashboard, workers = client.get("/").content.decode(), client.get("/workers/").content.decode()
    for name in targets.names():
        live = bool(live_worker_for(name))
        assert f'data-target="{name}" data-live="{"yes" if live else "no"}"' in dashboard
        line = workers.split(f"<strong>target.{name}</strong>:")[1].split("</li>")[0]
        assert ("no live worker" not in line) == live


@pytest.mark.parametrize("workload, example", [("softmax", "cols % VEC == 0"), ("matmul", "k % MR == 0")])
def test_the_constraint_hint_uses_the_workloads_own_names(as_role, workload, example):
    html = as_role("engineer").get(f"/goals/space/?workload={workload}&target=cpu").content.decode()
    hint = html.split('id="constraint-hint">')[1].split("</p>")[0]
    assert f"<code>{example}</code>" in hint
    assert workload != "matmul" or "cols" not in hint


def test_a_workload_page_states_its_dimension_order_example_shapes_and_this_hosts_limit(client):
    html = client.get("/workloads/matmul/").content.decode()
    fmt = html.split('id="shape-format">')[1].split("</p>")[0]
    assert "<code>m×n×k</code>" in fmt and "<code>m</code>, <code>n</code>, <code>k</code>" in fmt
    assert "e.g. <code>" in fmt and "GiB of memory" in fmt
    assert "typical: <code>" in html.split('id="example-shapes">')[1]
