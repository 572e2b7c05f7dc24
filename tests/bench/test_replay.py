"""Replaying searchers against a stored landscape: answered from the table, nothing measured."""
import json
import random

import pytest

from bench import replay
from kernels import workloads
from kernels.spec import Shape


def _result(n=60):
    tpl = workloads.get("softmax").template("cpu")
    rng = random.Random(1)
    rows, seen = [], set()
    while len(rows) < n:
        p = tpl.space.sample(rng, [Shape.of(rows=32, cols=256)])
        k = json.dumps(p, sort_keys=True)
        if k in seen:
            continue
        seen.add(k)
        score = p["VEC"] / 4 + (1 if p["ALGO"] == "two_pass" else 0) + p["NT"] * 0.5
        rows.append({"shape": "32x256", "params": p, "result": {"status": "ok", "reason": "", "score": score,
                                                                "median_ms": 1.0 / score}})
    return {"search": {"softmax": {"shape": "32x256"}}, "table": {"softmax": rows}}


def test_a_replay_answers_from_the_table_and_fills_unmeasured_points_from_their_nearest_neighbours():
    result = _result()
    table = replay.ReplayTable("softmax", "32x256", result["table"]["softmax"])
    known = result["table"]["softmax"][0]
    assert table.measure("32x256", "", known["params"]).score == known["result"]["score"]
    far = dict(known["params"], PF=1 - known["params"]["PF"])
    if table.key("32x256", far) not in table.rows:
        filled = table.measure("32x256", "", far).score
        assert min(r["result"]["score"] for r in result["table"]["softmax"]) <= filled <= table.best_score()


def test_the_swarm_and_random_search_replay_and_report_their_share_of_the_best(tmp_path, capsys):
    path = tmp_path / "result.json"
    path.write_text(json.dumps(_result()))
    assert replay.main([str(path), "--seeds", "2", "--budget", "12", "--searchers", "swarm_cold,random"]) == 0
    out = capsys.readouterr().out
    assert "softmax" in out and "swarm_cold" in out and "random" in out
    r = replay.replay(_result(), "softmax", "swarm_cold", seeds=2, budget=12)
    assert 0 < r["share_of_best"][12] <= 1.0


def test_a_result_without_a_table_is_refused_clearly(tmp_path):
    path = tmp_path / "result.json"
    path.write_text(json.dumps({"search": {}}))
    with pytest.raises(SystemExit):
        replay.main([str(path)])
