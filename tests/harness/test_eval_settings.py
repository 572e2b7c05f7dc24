"""What a goal may set about its evaluation: only tightenings, every refusal naming its key."""
import pytest

from kernels import workloads
from kernels.harness.settings import DEFAULTS, SettingsError, from_goal, gate_settings

SOFTMAX = workloads.get("softmax")


@pytest.fixture(autouse=True)
def harness_floor(monkeypatch):
    monkeypatch.setenv("INT21_EVAL_GOAL_FLOOR", "harness")


def refused(values: dict) -> SettingsError:
    with pytest.raises(SettingsError) as info:
        from_goal(values, workload=SOFTMAX)
    return info.value


@pytest.mark.parametrize("key,value", [("isolate", False), ("recheck", False), ("timing", False),
                                       ("seccomp", False), ("launcher", "spawn")])
def test_a_goal_cannot_switch_off_any_wall_of_the_sandbox_or_any_stage(key, value):
    err = refused({key: value})
    assert err.key == key and "may not set" in err.message


def test_an_unknown_key_is_an_error_naming_it_not_silently_dropped():
    err = refused({"repeats": 3})
    assert err.key == "repeats" and "unknown setting" in err.message and "seeds" in err.message


@pytest.mark.parametrize("key,value,words", [("memory_mb", 1 << 20, "cap"), ("run_timeout", 10_000, "cap"),
                                             ("compile_timeout", 10_000, "cap")])
def test_a_limit_above_the_hosts_cap_is_refused_with_the_cap(key, value, words):
    err = refused({key: value})
    assert err.key == key and words in err.message


def test_the_hosts_caps_are_its_own_to_raise(monkeypatch):
    monkeypatch.setenv("INT21_EVAL_MAX_MEMORY_MB", "16384")
    assert from_goal({"memory_mb": 8192}, workload=SOFTMAX).memory_mb == 8192


@pytest.mark.parametrize("key,value", [("seeds", 1), ("min_calls", 5), ("timing_budget_s", 0.2),
                                       ("target_rel_err", 0.5), ("max_calls", 10)])
def test_a_setting_may_only_tighten(key, value):
    err = refused({key: value})
    assert err.key == key and ("raised" in err.message or "lowered" in err.message)


def test_tightenings_are_taken():
    s = from_goal({"seeds": 9, "min_calls": 50, "timing_budget_s": 3.0, "target_rel_err": 0.01,
                   "memory_mb": 1024, "run_timeout": 30}, workload=SOFTMAX)
    assert (s.seeds, s.min_calls, s.timing_budget_s, s.target_rel_err, s.memory_mb, s.run_timeout) == \
        (9, 50, 3.0, 0.01, 1024, 30)
    assert s.recheck and s.timing and not s.loosened


def test_baselines_may_be_added_but_never_dropped():
    assert "torch_compile" in from_goal({"baselines": ["numpy", "torch", "torch_compile"]},
                                        workload=SOFTMAX).baselines
    err = refused({"baselines": ["numpy"]})
    assert err.key == "baselines" and "torch" in err.message
    assert refused({"baselines": ["nope"]}).key == "baselines"


def test_fast_math_is_allowed_but_said():
    s = from_goal({"fast_math": True}, workload=SOFTMAX)
    assert s.fast_math and any("fast-math" in n for n in s.loosened)


def test_the_hosts_fast_floor_lets_goals_check_less_but_never_switches_a_stage_off(monkeypatch):
    monkeypatch.setenv("INT21_EVAL_GOAL_FLOOR", "fast")
    s = from_goal({"seeds": 2, "min_calls": 5, "baselines": ["numpy"]}, workload=SOFTMAX)
    assert (s.seeds, s.min_calls, s.baselines) == (2, 5, ("numpy",))
    with pytest.raises(SettingsError):
        from_goal({"seeds": 1}, workload=SOFTMAX)
    with pytest.raises(SettingsError):
        from_goal({"recheck": False}, workload=SOFTMAX)


def test_the_gates_recheck_runs_the_full_defaults_plus_only_the_tightenings(monkeypatch):
    monkeypatch.setenv("INT21_EVAL_GOAL_FLOOR", "fast")
    s = gate_settings({"seeds": 2, "min_calls": 50, "baselines": ["numpy"]}, workload=SOFTMAX)
    assert s.seeds == DEFAULTS.seeds and s.min_calls == 50
    assert set(s.baselines) >= {"numpy", "torch"}
