"""The nearby-shape comparison of bench/swarm_bench.py: best-so-far with lessons against cold,
per seed and as medians, at 5, 10 and the run's budget."""
from bench.swarm_bench import compare


def test_compare_counts_seeds_ahead_level_and_behind_at_each_budget():
    curves = {0: {"warm": [2.0] * 12, "cold": [1.0] * 5 + [2.0] * 7},
              1: {"warm": [1.5] * 12, "cold": [1.0] * 9 + [1.6] * 3},
              2: {"warm": [1.0] * 4 + [1.2] * 8, "cold": [1.1] * 12}}
    at = compare(curves, 12)
    assert sorted(at) == [5, 10, 12]
    assert at[5]["warm"] == [2.0, 1.5, 1.2] and at[5]["cold"] == [1.0, 1.0, 1.1]
    assert (at[5]["warm_ahead_seeds"], at[5]["level_seeds"], at[5]["warm_behind_seeds"]) == (3, 0, 0)
    assert (at[10]["warm_ahead_seeds"], at[10]["level_seeds"], at[10]["warm_behind_seeds"]) == (1, 1, 1)
    assert at[10]["warm_median"] == 1.5 and at[10]["cold_median"] == 1.6


def test_a_run_shorter_than_the_budget_is_read_at_its_last_evaluation_and_small_budgets_drop_10():
    at = compare({0: {"warm": [1.0, 3.0], "cold": [2.0] * 8}}, 8)
    assert sorted(at) == [5, 8]
    assert at[8]["warm"] == [3.0] and at[8]["warm_ahead_seeds"] == 1
