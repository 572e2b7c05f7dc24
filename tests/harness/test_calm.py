"""A session timed in a slow phase of the host is timed again, chosen by the baselines alone."""
import json

from kernels import workloads
from kernels.harness import calm
from kernels.harness.calm import BaselineNorms
from kernels.harness.evaluator import EvalSettings, Evaluator
from kernels.spec import Shape
from kernels.targets import get as get_target

WL = workloads.get("softmax")
SHAPE = Shape.of(rows=256, cols=1024)


def _timings(**medians):
    return {name: {"median_ms": ms} for name, ms in medians.items()}


def test_the_usual_median_is_the_second_lowest_of_the_recent_sessions(tmp_path):
    norms = BaselineNorms({"cpu_model": "x"}, "softmax", "cpu", "4x4", False, root=tmp_path)
    assert norms.usual() == {}
    norms.record(_timings(candidate=1.0, numpy=10.0, torch=4.0))
    assert norms.usual() == {"numpy": 10.0, "torch": 4.0}, "the candidate is never a norm"
    norms.record(_timings(numpy=9.0, torch=4.4))
    assert norms.usual() == {"numpy": 9.0, "torch": 4.0}, "the lowest while fewer than 3"
    norms.record(_timings(numpy=2.0, torch=4.2))
    assert norms.usual() == {"numpy": 9.0, "torch": 4.2}, "one lucky session does not set the bar"


def test_old_sessions_age_out_so_a_host_that_got_slower_for_good_stops_being_disturbed(tmp_path):
    norms = BaselineNorms({"cpu_model": "x"}, "softmax", "cpu", "4x4", False, root=tmp_path)
    for _ in range(3):
        norms.record(_timings(torch=4.0))
    assert norms.judge(_timings(candidate=3.0, torch=6.0)).disturbed
    for _ in range(calm.WINDOW):
        norms.record(_timings(torch=6.0))
    assert not norms.judge(_timings(torch=6.0)).disturbed
    assert len(json.loads(norms.path.read_text())[norms.key]["torch"]) == calm.WINDOW


def test_the_slowest_baseline_decides_and_each_host_shape_and_cache_mode_has_its_own_figures(tmp_path):
    norms = BaselineNorms({"cpu_model": "x"}, "softmax", "cpu", "4x4", False, root=tmp_path)
    norms.record(_timings(numpy=20.0, torch=4.0))
    judged = norms.judge(_timings(candidate=0.1, numpy=20.5, torch=6.2))
    assert judged.disturbed and judged.baseline == "torch" and round(judged.ratio, 2) == 1.55
    assert "torch 6.200 ms against its usual 4.000 ms on this host (+55%)" == judged.sentence()
    assert not norms.judge(_timings(numpy=21.0, torch=4.4)).disturbed
    for other in (BaselineNorms({"cpu_model": "y"}, "softmax", "cpu", "4x4", False, root=tmp_path),
                  BaselineNorms({"cpu_model": "x"}, "softmax", "cpu", "8x8", False, root=tmp_path),
                  BaselineNorms({"cpu_model": "x"}, "softmax", "cpu", "4x4", True, root=tmp_path)):
        assert other.usual() == {}


def test_cpu_time_stolen_by_the_hypervisor_makes_a_session_slow_whatever_the_baselines_say(tmp_path):
    norms = BaselineNorms({"cpu_model": "x"}, "softmax", "cpu", "4x4", False, root=tmp_path)
    norms.record(_timings(numpy=20.0, torch=4.0))
    judged = norms.judge(_timings(numpy=20.2, torch=4.1))
    assert not judged.disturbed
    judged.steal = 0.25                      # a quarter of the CPUs' time went elsewhere
    assert judged.disturbed and round(judged.slowness, 3) == 1.333
    assert judged.sentence().endswith("25% of the CPU time stolen by the hypervisor")
    assert judged.to_json()["steal"] == 0.25
    # the ticks: (steal, total) per CPU from /proc/stat; the worst CPU's share between samples
    assert calm.steal_between([(10, 1000), (0, 1000)], [(60, 1200), (2, 1200)]) == 0.25
    assert calm.steal_between(None, [(60, 1200)]) is None
    assert calm.steal_between([(10, 1000)], [(10, 1000)]) is None
    ticks = calm.cpu_ticks()
    assert ticks is None or all(0 <= steal <= total for steal, total in ticks)


def test_cpu_time_other_programs_ran_during_the_timed_calls_makes_a_session_slow(tmp_path):
    norms = BaselineNorms({"cpu_model": "x"}, "softmax", "cpu", "4x4", False, root=tmp_path)
    norms.record(_timings(numpy=20.0, torch=4.0))
    judged = norms.judge(_timings(numpy=20.2, torch=4.1))
    judged.others = 0.04                     # the parent's polling, the kernel's housekeeping
    assert not judged.disturbed and "other programs" not in judged.sentence()
    judged.others = 0.5                      # half a CPU ran something else
    assert judged.disturbed and round(judged.slowness, 3) == 2.0
    assert judged.sentence().endswith("other programs ran 50% of a CPU during the timed calls")
    assert judged.to_json()["others"] == 0.5
    stat = "cpu  1 2 3 4 5 6 7 8 0 0\ncpu0 100 0 50 1000 0 5 5 0 0 0\ncpu1 200 10 40 900 3 0 0 7 0 0\nintr 1\n"
    assert calm.parse_stat(stat) == [(0, 160, 1160), (7, 250, 1160)]
    hz = __import__("os").sysconf("SC_CLK_TCK")
    later = stat.replace("cpu0 100", f"cpu0 {100 + 3 * hz}")   # 3 s more busy time on cpu0
    # 3 s of busy CPU time in 2 s of wall time, 2 s of it the child's own: 1 s / 2 s = half a CPU
    assert calm.others_share((stat, 10.0, 100.0), (later, 12.0, 102.0)) == 0.5
    assert calm.others_share((stat, 10.0, 100.0), (later, 16.0, 102.0)) == 0.0, "never negative"
    assert calm.others_share((None, 1.0, 1.0), (None, 2.0, 2.0)) is None


def _norms():
    return BaselineNorms(get_target("cpu").fingerprint(), "softmax", "cpu", SHAPE.label(), False)


def _evaluate(retime: int):
    src, params = WL.template("cpu").seeds()[0]
    settings = EvalSettings(timing_shape=SHAPE, min_calls=10, retime=retime)
    return Evaluator(settings).evaluate(src, params, WL, "cpu")


def test_a_session_whose_baselines_ran_slow_is_timed_again_in_a_fresh_process():
    # This host's usual medians, as if every earlier session had run 1000x faster: every
    # real session now looks like a slow phase.
    norms = _norms()
    norms.path.unlink(missing_ok=True)
    for _ in range(3):
        norms.record(_timings(numpy=1e-6, torch=1e-6))
    out = _evaluate(retime=2)
    assert out.status == "ok", out.reason
    bench = out.stage("benchmark")
    sessions = bench.details["host_calm"]["sessions"]
    assert all(s["ratio"] > calm.SLOW for s in sessions)
    # a third session only where the second was clearly calmer than the first
    third = sessions[1]["ratio"] < calm.PERSISTS * sessions[0]["ratio"]
    assert len(sessions) == (3 if third else 2), sessions
    kept = bench.details["host_calm"]["kept"]
    assert sessions[kept]["ratio"] == min(s["ratio"] for s in sessions)
    assert f"calmest of {len(sessions)} sessions" in bench.summary
    assert any(n.startswith(f"timed {len(sessions)} times: the host was in a slow phase") for n in out.notes)
    recorded = json.loads(norms.path.read_text())[norms.key]
    assert all(len(v) == 3 + len(sessions) for v in recorded.values()), "every session's medians are remembered"

    once = _evaluate(retime=0)
    assert once.status == "ok" and len(once.stage("benchmark").details["host_calm"]["sessions"]) == 1
    assert not any(n.startswith("timed") for n in once.notes)


def test_a_calm_session_is_timed_once():
    norms = _norms()
    norms.path.unlink(missing_ok=True)
    for _ in range(3):
        norms.record(_timings(numpy=1e6, torch=1e6))
    out = _evaluate(retime=2)
    assert out.status == "ok", out.reason
    calm_report = out.stage("benchmark").details["host_calm"]
    first = calm_report["sessions"][0]
    assert first["ratio"] < 1 and first["others"] is not None
    # timed again only if the host really was busy (another program, the hypervisor), and said so
    assert len(calm_report["sessions"]) == 1 or first["others"] > 1 / 6 or first["steal"] > 1 / 6


def test_a_program_burning_a_cpu_while_the_candidate_is_timed_makes_the_session_time_again():
    import subprocess
    import sys
    norms = _norms()
    norms.path.unlink(missing_ok=True)
    for _ in range(3):
        norms.record(_timings(numpy=1e6, torch=1e6))   # the baselines alone would call it calm
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        out = _evaluate(retime=1)
    finally:
        hog.kill()
        hog.wait()
    assert out.status == "ok", out.reason
    sessions = out.stage("benchmark").details["host_calm"]["sessions"]
    assert len(sessions) == 2, sessions
    assert all(s["ratio"] < 1 and s["others"] > 0.3 for s in sessions), sessions
    assert any("other programs ran" in n for n in out.notes)


def _scripted_sessions(monkeypatch, tmp_path, numpy_medians):
    """The evaluator's session loop over scripted timing sessions (a seam: the real timing
    child is exercised above); the host's usual NumPy median is 10 ms."""
    import types
    monkeypatch.setenv("INT21_CACHE_DIR", str(tmp_path))
    tcase = types.SimpleNamespace(shape=SHAPE)
    norms = _norms()
    for _ in range(3):
        norms.record(_timings(numpy=10.0))
    script = iter(numpy_medians)

    def session(ctx, shape, baselines):
        return {"verdict": None, "timings": _timings(candidate=1.0, numpy=next(script)), "notes": [],
                "details": {}, "summary": "timed"}
    from kernels.harness import evaluator
    monkeypatch.setattr(evaluator, "_session", session)
    ev = Evaluator(EvalSettings(timing_shape=SHAPE, retime=2))
    ctx = types.SimpleNamespace(wl=WL, tgt=get_target("cpu"))
    return ev._calm_benchmark(ctx, tcase.shape, [])


def test_a_slow_phase_that_persists_into_the_second_session_is_not_timed_a_third_time(monkeypatch, tmp_path):
    bench = _scripted_sessions(monkeypatch, tmp_path, [15.0, 14.0, 10.0])   # 1.5x, then 1.4x: it persists
    sessions = bench["details"]["host_calm"]["sessions"]
    assert [round(s["ratio"], 2) for s in sessions] == [1.5, 1.4]
    assert bench["details"]["host_calm"]["kept"] == 1
    assert bench["notes"][-1].endswith("the phase persisted, so it was not timed again")


def test_a_slow_phase_that_is_ending_is_timed_until_calm(monkeypatch, tmp_path):
    bench = _scripted_sessions(monkeypatch, tmp_path, [15.0, 12.5, 10.0])   # 1.5x, 1.25x, then calm
    sessions = bench["details"]["host_calm"]["sessions"]
    assert [round(s["ratio"], 2) for s in sessions] == [1.5, 1.25, 1.0]
    assert bench["details"]["host_calm"]["kept"] == 2
    assert "persisted" not in bench["notes"][-1]


def test_busy_threads_counts_the_threads_that_did_a_share_of_the_work():
    from kernels.harness.process import busy_threads
    before = {"per_thread": {"1": 100, "2": 0, "3": 50}}
    # thread 1 did 1000 ns, thread 2 (started since) 900 ns, thread 3 only 10 ns: two busy
    after = {"per_thread": {"1": 1100, "2": 900, "3": 60, "4": 5}}
    assert busy_threads(before, after) == 2
    assert busy_threads(before, {"per_thread": {"1": 2100}}) == 1
    assert busy_threads(None, after) is None and busy_threads(before, {"per_thread": {"1": 100}}) is None
