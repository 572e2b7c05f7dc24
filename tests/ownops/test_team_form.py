"""The team form (kernels/codegen/team.py): a program's groups inside one parallel region, with
spin barriers between them. What is refused is written first: every construct whose meaning
would change when a region's body runs as an orphaned function of a larger team."""
import re

import pytest

from kernels import workloads
from kernels.codegen.team import NotTeam, team_body
from kernels.harness.evaluator import EvalSettings, Evaluator

LOOP = """for (int64_t i = 0; i < 64; i++) {
    c[i] = a[i] * 2.0f;
}"""


@pytest.mark.parametrize("body, why", [
    ("#pragma omp parallel num_threads(G1_THREADS)\n{\n#pragma omp single\n{ c[0] = 1.0f; }\n}\n", "single"),
    ("#pragma omp parallel num_threads(G1_THREADS)\n{\n#pragma omp critical\n{ c[0] += 1.0f; }\n}\n", "critical"),
    (f"#pragma omp parallel num_threads(G1_THREADS)\n{{\n#pragma omp for reduction(+:s)\n{LOOP}\n}}\n", "reduction"),
    (f"#pragma omp parallel for num_threads(G1_THREADS) reduction(+:s)\n{LOOP}\n", "reduction"),
    (f"#pragma omp parallel for num_threads(G1_THREADS) lastprivate(i)\n{LOOP}\n", "lastprivate"),
    (f"#pragma omp parallel for num_threads(G1_THREADS) default(none)\n{LOOP}\n", "default"),
    (f"#pragma omp parallel for\n{LOOP}\n", "without num_threads"),
    (f"#pragma omp parallel for num_threads(next_count())\n{LOOP}\n", "not a name or a number"),
    (f"c[0] = 0.0f;\n#pragma omp parallel for num_threads(G1_THREADS)\n{LOOP}\n", "`c ...`"),
    (f"float acc = 0.0f;\n#pragma omp parallel for num_threads(G1_THREADS)\n{LOOP}\n", "`float ...`"),
    (f"for (int b = 0; b < 2; b++) {{\n#pragma omp parallel for num_threads(G1_THREADS)\n{LOOP}\n}}\n", "outside"),
    (f"#pragma omp parallel num_threads(G1_THREADS)\n{{\n#pragma omp parallel for num_threads(2)\n{LOOP}\n}}\n",
     "inside a parallel region"),
    (f"#pragma omp parallel num_threads(G1_THREADS)\n{{\n#pragma omp for\n#if X\n{LOOP}\n#endif\n}}\n", "preprocessor"),
    ("#pragma omp task\n{ c[0] = 1.0f; }\n", "outside a parallel region"),
    ("static float *keep = 0;\n", "`static ...`"),
])
def test_constructs_whose_meaning_would_change_are_refused(body, why):
    with pytest.raises(NotTeam, match=re.escape(why)):
        team_body(body)


def test_a_parallel_loop_becomes_an_orphaned_loop_with_a_barrier_and_keeps_its_one_thread_form():
    body = (f"/* a comment, #pragma omp single in it */\nconst int64_t n = 64;\n(void)n;\n"
            f"#pragma omp parallel for num_threads(G1_THREADS) collapse(1) schedule(static)\n{LOOP}\n")
    out = team_body(body)
    team, alone = out.split("#else")
    assert "#if (G1_THREADS) > 1" in team
    assert "#pragma omp for collapse(1) schedule(static) nowait" in team
    assert team.index("c[i] = a[i]") < team.index("i21_sync();")
    # the one-thread form: the original region, on thread 0, then the team's barrier
    assert "if (omp_get_thread_num() == 0)" in alone
    assert "#pragma omp parallel for num_threads(G1_THREADS) collapse(1) schedule(static)" in alone
    assert alone.index("c[i] = a[i]") < alone.index("i21_sync();")
    assert "const int64_t n = 64;" in out and "single" not in out


def test_a_parallel_block_keeps_its_loops_barriers_and_drops_none():
    body = ("#pragma omp parallel num_threads(G2_THREADS)\n"
            "for (int64_t bb = 0; bb < 2; bb++) {\n"
            "    #pragma omp for schedule(dynamic, 1)\n"
            f"    {LOOP}\n"
            "    #pragma omp barrier\n"
            "    #pragma omp for schedule(static) nowait\n"
            f"    {LOOP}\n"
            "    #pragma omp simd\n"
            "    for (int64_t j = 0; j < 8; j++) d[j] = 0.0f;\n"
            "}\n")
    team = team_body(body).split("#else")[0]
    assert "#pragma omp parallel" not in team
    assert team.count("#pragma omp for schedule(dynamic, 1) nowait") == 1
    assert team.count("#pragma omp for schedule(static) nowait") == 1
    assert "#pragma omp simd" in team
    # the loop that waited (implicit barrier), the explicit barrier, the region's join: three;
    # the loop that did not wait: none
    assert team.count("i21_sync();") == 3


# Problems whose programs have several groups, some with several regions (reductions_mixed:
# two groups without a team form, which run on thread 0 inside the team).
MULTI = ["linear3d_relu_residual", "matmul_avgpool_gelu_max", "views_cat_slice", "reductions_mixed"]


def evaluate(name, source=None, **changes):
    wl = workloads.get(name)
    src, params = wl.template("cpu").seeds()[0]
    params.update(changes)
    return Evaluator(EvalSettings(timing=False)).evaluate(source or src, params, wl, "cpu")


def every_thread_knob(name, n):
    return {p.name: n for p in workloads.get(name).template("cpu").space.params if p.name.endswith("THREADS")}


@pytest.mark.parametrize("name", MULTI)
def test_the_team_form_is_correct_with_two_threads_in_every_group(name, imported):
    assert imported(name).ok
    src = workloads.get(name).template("cpu").seeds()[0][0]
    assert "_team(" in src and "TEAM" in workloads.get(name).template("cpu").space.names
    assert ("not in team form" in src) == (name == "reductions_mixed")
    out = evaluate(name, TEAM=1, **every_thread_knob(name, 2))
    assert out.status == "ok", out.reason


def test_the_team_form_runs_and_the_knob_switches_it_off(imported):
    """A control: a barrier that crashes is reached with TEAM 1 and two threads (the form is
    really what runs), never with TEAM 0 or with one thread."""
    name = "linear3d_relu_residual"
    assert imported(name).ok
    src = workloads.get(name).template("cpu").seeds()[0][0]
    broken = src.replace("static inline void i21_sync(void) {",
                         "static inline void i21_sync(void) {\n    if (omp_get_num_threads() > 1) abort();", 1)
    assert broken != src
    crashed = evaluate(name, broken, TEAM=1, **every_thread_knob(name, 2))
    assert crashed.status != "ok"
    assert evaluate(name, broken, TEAM=0, **every_thread_knob(name, 2)).status == "ok"
    assert evaluate(name, broken, TEAM=1, **every_thread_knob(name, 1)).status == "ok"
