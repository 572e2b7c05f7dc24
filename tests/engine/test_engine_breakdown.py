"""The time breakdown per group: ``manage.py engine breakdown`` on the tiny decoder's decode
phase (every group judged and timed on its own in the harness, ``--quick``), stored in the
record, drawn and tabulated on the engine page, and in the engines API."""
import io
import json

import pytest
from django.core.management import CommandError, call_command

from int21web.ops import models as om
from kernels.codegen.signature import active
from tests.web.ops_world import client_for, people  # noqa: F401 (a fixture)


@pytest.mark.django_db
def test_each_group_of_the_decode_phase_is_timed_alone_and_the_page_shows_where_the_time_goes(
        people, tiny_checked, capsys):
    # tiny_checked (shared with the other engine tests) compiled the whole phase at its defaults
    # already: the whole phase timed beside the groups here finds it in the compile cache
    from kernels import workloads
    from kernels.engine import store
    om.Engine.objects.create(name="tiny", record=store.load("tiny"), created_by=people["erin"])
    call_command("engine", "breakdown", "tiny", "--phase", "decode", "--quick", "--seeds", "1", "--json",
                 stdout=io.StringIO())
    out = capsys.readouterr().out
    assert out.count("\n") == 1, out                        # exactly one JSON object
    report = json.loads(out)["phases"]["decode"]

    wl = workloads.get("tiny_decode")
    running = active(list(wl.groups), wl.template("cpu").space.default())
    assert report["groups"] == len(running) == sum(r["count"] for r in report["rows"])
    assert sorted(i for r in report["rows"] for i in r["ids"]) == sorted(g["id"] for g in running)
    assert report["distinct"] < report["groups"]            # the second layer's groups are the first's
    for row in report["rows"]:
        assert (row["median_ms"] or 0) > 0 or row["reason"].startswith("not timed"), row
    timed = [r for r in report["rows"] if r["median_ms"]]
    assert {"matmul", "attention", "reduction"} <= {r["family"] for r in timed}
    assert report["sum_ms"] == pytest.approx(sum(r["count"] * r["median_ms"] for r in timed), abs=1e-5)
    assert sum(r["share"] for r in timed) == pytest.approx(1.0, abs=1e-3)
    assert report["whole_ms"] > 0 and report["sum_over_whole"] > 0 and "not the engine's time" in report["note"]
    assert store.load("tiny")["breakdown"]["decode"]["sum_ms"] == report["sum_ms"]

    html = client_for(people["vic"]).get("/engines/tiny/").content.decode()
    figure = json.loads(html.split('id="breakdown-data-decode" type="application/json">')[1].split("</script>")[0])
    assert figure["data"][0]["orientation"] == "h" and len(figure["data"][0]["y"]) == report["distinct"]
    assert "not the engine&#x27;s time" in html and "Share of the sum" in html
    assert "No breakdown yet: <code>manage.py engine breakdown tiny --phase prefill</code>" in html
    api = client_for(people["vic"]).get("/api/engines/tiny").json()
    assert api["phases"]["decode"]["breakdown"]["rows"] == report["rows"]
    assert api["phases"]["prefill"]["breakdown"] is None


@pytest.mark.django_db
def test_an_unknown_engine_or_phase_is_refused_with_a_reason(people, tiny_engine):
    from kernels.engine import store
    with pytest.raises(CommandError) as err:
        call_command("engine", "breakdown", "nothing", stdout=io.StringIO())
    assert err.value.returncode == 2 and "no engine named 'nothing'" in str(err.value)
    om.Engine.objects.create(name="tiny", record=store.load("tiny"), created_by=people["erin"])
    with pytest.raises(CommandError) as err:
        call_command("engine", "breakdown", "tiny", "--phase", "forward", stdout=io.StringIO())
    assert err.value.returncode == 2 and "tiny has no phase forward" in str(err.value)
