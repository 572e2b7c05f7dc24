"""The whole-space sweep: every legal point measured once, shared with the searchers' table."""
import json
import time

from bench import searchers, suite
from bench.measure import Table
from kernels import workloads
from swarm.types import Result


class _Landscape(Table):
    """A table whose measurements come from a formula (the sweep's bookkeeping is under test,
    not the harness: tests/bench/test_measure.py measures for real)."""

    def __init__(self):
        super().__init__("rmsnorm", min_calls=5, log=None)
        self.order = []

    def measure(self, shape, source, params):
        k = self.key(shape, params)
        if k not in self.rows:
            if self.deadline is not None and time.monotonic() > self.deadline:
                raise suite.TimeUp("late")
            self.order.append(params)
            score = 1.0 + params["VEC"] / 16 + (params["THREADS"] == 2)
            self.rows[k] = {"shape": shape, "params": params,
                            "result": Result(status="ok", reason="", score=score).to_json()}
        return Result(**self.rows[k]["result"])


class _Quiet:
    def task(self, *_a): pass
    def finished(self): pass


def test_every_legal_point_is_measured_once_in_a_shuffled_order():
    table = _Landscape()
    wl = workloads.get("rmsnorm")
    legal = list(wl.template("cpu").space.points([wl.shape_from_text("64x256")]))
    already = legal[0]
    table.measure("64x256", "", already)
    out = suite.sweep("rmsnorm", table, "64x256", 10_000, _Quiet(), time.monotonic() + 60)
    assert out["status"] == "complete" and out["legal_points"] == len(legal)
    assert out["measured_by_sweep"] == len(legal) - 1 == len(table.order) - 1
    assert {json.dumps(p, sort_keys=True) for p in table.order} == {json.dumps(p, sort_keys=True) for p in legal}
    assert table.order[1:] != legal[1:], "shuffled: a slow phase of the host is spread over the space"
    assert all(not wl.template("cpu").space.violations(p, [wl.shape_from_text("64x256")]) for p in table.order)


def test_a_space_over_the_limit_is_not_swept_and_a_cut_sweep_says_so():
    table = _Landscape()
    out = suite.sweep("rmsnorm", table, "64x256", 10, _Quiet(), time.monotonic() + 60)
    assert out["status"].startswith("not swept: more than 10 legal points") and not table.order
    started = time.monotonic()
    big = suite.sweep("matmul", Table("matmul", min_calls=5, log=None), "64x64x64", 1000, _Quiet(),
                      time.monotonic() + 60)
    assert big["status"].startswith("not swept") and time.monotonic() - started < 10, \
        "a space of millions is refused without enumerating it"
    out = suite.sweep("rmsnorm", table, "64x256", 10_000, _Quiet(), time.monotonic() - 1)
    assert out["status"].startswith("incomplete") and table.deadline is None


def test_extra_random_seeds_run_random_search_alone(monkeypatch):
    calls = []

    def fake_searcher(name, table, shape, budget, seed, teacher=None):
        calls.append((name, seed))
        return [({"VEC": 8, "THREADS": 2}, 1.0)]
    monkeypatch.setattr(suite.searchers, "run_searcher", fake_searcher)
    monkeypatch.setattr(suite.searchers, "swarm_trace", lambda *a, **k: calls.append(("swarm_cold", a[3])) or
                        [({"VEC": 8, "THREADS": 2}, 1.0)])
    plan = suite.Plan(workloads=["rmsnorm"], budgets=[2], seeds=2, random_seeds=5, confirm_top=0,
                      searchers=["swarm_cold", "swarm_warm", "random"])
    out = suite.search_section("rmsnorm", _Landscape(), "64x256", plan, _Quiet(), suite.Clock(5),
                               time.monotonic() + 60)
    assert sorted(s for n, s in calls if n == "random") == [0, 1, 2, 3, 4]
    assert sorted(s for n, s in calls if n != "random") == [0, 0, 1, 1]
    assert out["searchers"]["random"]["uniform_draws"]["draws"] == 5
    assert len(out["searchers"]["swarm_cold"]["runs"]) == 2


def test_self_improvement_aims_at_the_kernel_the_cold_run_reported_not_a_point_lifted_after_it(monkeypatch):
    table = _Landscape()
    pts = [{"VEC": v, "THREADS": t} for v, t in ((1, 1), (8, 1), (16, 1), (8, 2), (16, 2))]
    for p in pts:
        table.measure("64x256", "", p)
    lucky, best = pts[3], pts[4]

    def cold(table_, shape, budget, seed, knowledge, cold):
        trace = searchers.Trace((p, table_.score(shape, p)) for p in pts)
        trace.best = best
        # After the run, the table's own confirmation lifts a point the run measured once.
        table_.rows[table_.key(shape, lucky)]["result"]["score"] = 9.0
        return trace
    monkeypatch.setattr(suite.searchers, "swarm_trace", cold)
    monkeypatch.setattr(suite.searchers, "run_searcher",
                        lambda name, t, shape, budget, seed, teacher=None: [(best, t.score(shape, best))])
    plan = suite.Plan(workloads=["rmsnorm"], budgets=[5], seeds=1, confirm_top=0,
                      searchers=["swarm_cold", "swarm_warm"])
    out = suite.search_section("rmsnorm", table, "64x256", plan, _Quiet(), suite.Clock(5), time.monotonic() + 60)
    [row] = out["self_improvement"]
    assert row["teacher_best_params"] == best and row["teacher_best"] == table.score("64x256", best)
    assert row["teacher_trace_max"] == 9.0
    assert row["warm_evals"] == 1 and row["cold_evals"] == 4
