"""Goals for daily use: archived (never deleted while runs refer to them), searched by name,
filtered by workload, target and owner, on the page and in the API."""
import pytest

from int21web.runs import models as m

pytestmark = pytest.mark.django_db


@pytest.fixture
def goals(users):
    def goal(name, workload, owner):
        return m.Goal.objects.create(name=name, spec={"workload": workload, "target": "cpu"}, created_by=users[owner])
    made = {"rows": goal("softmax rows", "softmax", "engineer"), "mm": goal("big matmul", "matmul", "admin"),
            "old": goal("softmax, old try", "softmax", "engineer")}
    m.Run.objects.create(goal=made["old"], spec=made["old"].spec, state="finished")
    return made


def names(html):
    return [row.split('/">')[1].split("<")[0] for row in html.split('<tr><td><a href="/goals/')[1:]]


def test_the_goal_list_searches_names_and_filters_by_workload_target_and_owner(as_role, goals):
    client = as_role("viewer")
    assert names(client.get("/goals/").content.decode()) == ["softmax, old try", "big matmul", "softmax rows"]
    assert names(client.get("/goals/?q=SOFTMAX+rows").content.decode()) == ["softmax rows"]
    assert names(client.get("/goals/?workload=matmul").content.decode()) == ["big matmul"]
    assert names(client.get("/goals/?owner=engineer&target=cpu").content.decode()) == ["softmax, old try", "softmax rows"]
    assert 'id="no-match"' in client.get("/goals/?q=nothing+like+this").content.decode()
    assert 400 <= client.get("/api/goals?q=%00").status_code < 500 and client.get("/goals/?q=%00").status_code == 400
    api = client.get("/api/goals?q=matmul").json()
    assert [g["name"] for g in api] == ["big matmul"] and api[0]["archived_at"] is None


def test_a_goal_with_runs_is_archived_not_deleted_and_can_be_restored(as_role, goals):
    client = as_role("engineer")
    old = goals["old"]
    resp = client.post(f"/goals/{old.id}/delete/", follow=True)
    assert "has 1 run: archive it instead" in resp.content.decode() and m.Goal.objects.filter(pk=old.id).exists()
    assert 'id="delete-goal"' not in client.get(f"/goals/{old.id}/").content.decode()   # not offered either

    client.post(f"/goals/{old.id}/archive/")
    old.refresh_from_db()
    assert old.archived_at is not None and m.Run.objects.get().goal_id == old.id
    assert "softmax, old try" not in names(client.get("/goals/").content.decode())
    assert names(client.get("/goals/?archived=1").content.decode()) == ["softmax, old try"]
    assert [g["name"] for g in client.get("/api/goals?archived=true").json()] == ["softmax, old try"]
    page = client.get(f"/goals/{old.id}/").content.decode()
    assert 'id="archived-note"' in page and 'id="start-run"' not in page and 'id="restore-goal"' in page
    refused = client.post(f"/goals/{old.id}/start/", follow=True)
    assert "is archived: restore it to start a run" in refused.content.decode() and m.Run.objects.count() == 1

    client.post(f"/goals/{old.id}/archive/", {"restore": "1"})
    assert "softmax, old try" in names(client.get("/goals/").content.decode())


def test_a_goal_without_runs_is_deleted(as_role, goals):
    client = as_role("engineer")
    rows = goals["rows"]
    assert 'id="delete-goal"' in client.get(f"/goals/{rows.id}/").content.decode()
    assert client.post(f"/goals/{rows.id}/delete/").status_code == 302
    assert not m.Goal.objects.filter(pk=rows.id).exists()
    assert as_role("viewer").post(f"/goals/{goals['mm'].id}/delete/").status_code == 403
