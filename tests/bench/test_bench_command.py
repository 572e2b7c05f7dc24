"""`python -m bench peers --quick` on one tiny workload and shape with a tiny budget: the
report's shape (keys, files, tables), never its numbers."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench import peers

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def quick_bench(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    docs = out / "benchmarks.md"
    peers.main(["--quick", "--workload", "softmax", "--shape", "softmax=32x256:32x256,64x256",
                "--budgets", "2,3", "--seeds", "1", "--sessions", "1", "--min-calls", "5", "--search-min-calls", "5",
                "--confirm-top", "3", "--timing-budget", "0.25", "--no-compile", "--out", str(out), "--docs", str(docs)])
    [json_path] = out.glob("*-quick.json")
    return json.loads(json_path.read_text()), json_path, docs


def test_it_writes_the_json_result_the_html_report_and_the_markdown_page(quick_bench):
    result, json_path, docs = quick_bench
    html = json_path.with_suffix(".html").read_text()
    assert docs.read_text().startswith("# Benchmarks")
    assert re.search(r"plotly\.js v\d", html)            # plotly.js embedded…
    assert not re.search(r"<script[^>]*\ssrc=", html)      # …and nothing loaded from elsewhere
    assert html.count('class="plotly-graph-div"') >= 3


def test_the_result_states_the_host_the_command_and_the_roofline_measured_in_the_run(quick_bench):
    result, _, _ = quick_bench
    assert {"benchmark", "command", "date", "host", "plan", "roofline", "kernels", "search", "targets",
            "gpu", "seconds", "table"} <= set(result)
    assert result["command"].startswith("python -m bench peers --quick --workload softmax")
    assert result["plan"]["timing_budget_s"] == 0.25 and result["plan"]["search_eval"]["timing_budget_s"] == 0.25
    assert {"hostname", "fingerprint", "versions", "load_average_at_start",
            "openblas_env_of_bench_process"} <= set(result["host"])
    assert {"copy_gbs", "triad_gbs", "peak_gflops"} <= set(result["roofline"])


def test_every_searcher_has_a_best_per_budget_and_seed(quick_bench):
    result, _, _ = quick_bench
    search = result["search"]["softmax"]
    assert set(search["searchers"]) == {"swarm_cold", "swarm_warm", "kt_bayes_opt", "kt_genetic_algorithm",
                                        "optuna_tpe", "random"}
    for name, entry in search["searchers"].items():
        assert entry["status"] == "ok", name
        assert set(entry["at_budget"]) == {"2", "3"}
        assert len(entry["at_budget"]["3"]["per_seed"]) == 1
        assert set(entry["runs"]) == {"0"}
        assert "evals_to_95pct" in entry
    assert search["distinct_points_measured"] >= 4


def test_the_kernel_table_has_ratios_against_the_baselines_and_a_roofline_share(quick_bench):
    result, _, _ = quick_bench
    k = result["kernels"]["softmax"]["32x256"]
    assert k["status"] == "ok"
    assert {"numpy", "torch_eager"} <= set(k["by_kind"])
    assert {"ratio_median", "ratio_min", "ratio_max"} <= set(k["by_kind"]["numpy"])
    assert "pct_of_roofline" in k["candidate"]["roofline"]
    assert k["environment_of_measurement"] == {"OPENBLAS_CORETYPE": None, "OPENBLAS_L2_SIZE": None}


def test_targets_are_marked_and_the_gpu_section_says_why_it_did_not_run(quick_bench):
    result, _, docs = quick_bench
    assert all({"issue", "text", "met", "note"} <= set(t) for t in result["targets"])
    assert any(t["issue"] == 7 for t in result["targets"])
    md = docs.read_text()
    for heading in ("## Targets", "## Kernels", "## Search", "## Where the swarm is not ahead", "## GPU"):
        assert heading in md
    assert "| swarm (cold) |" in md and "| Kernel Tuner bayes_opt |" in md
    if not result["gpu"]["ran"]:
        assert result["gpu"]["why"]


def test_render_rewrites_the_page_and_the_report_from_a_result_without_measuring(quick_bench, tmp_path):
    _, json_path, docs = quick_bench
    again = tmp_path / "again.md"
    assert peers.main(["--render", str(json_path), "--docs", str(again)]) == 0
    assert again.read_text() == docs.read_text()


def test_an_unknown_workload_is_refused_with_status_2_and_the_reason(capsys):
    with pytest.raises(SystemExit) as exc:
        peers.main(["--workload", "nope", "--docs", "-"])
    assert exc.value.code == 2 and "unknown workload" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        peers.main(["--quick", "--timing-budget", "0", "--docs", "-"])
    assert exc.value.code == 2 and "--timing-budget must be a positive number" in capsys.readouterr().err


def test_python_m_bench_lists_the_benchmarks_and_refuses_an_unknown_one():
    """The entry point itself, as `make bench` runs it, with no Django settings in sight."""
    bare = {"PATH": "/usr/bin:/bin"}
    listed = subprocess.run([sys.executable, "-m", "bench", "--help"], cwd=ROOT, capture_output=True, text=True,
                            timeout=60, env=bare)
    assert listed.returncode == 0, listed.stderr
    for name in ("peers", "harness", "swarm", "fleet", "live-latency", "replay", "gpu"):
        assert f"  {name} " in listed.stdout
    unknown = subprocess.run([sys.executable, "-m", "bench", "nope"], cwd=ROOT, capture_output=True, text=True,
                             timeout=60)
    assert unknown.returncode == 2 and "unknown benchmark 'nope'" in unknown.stderr
    help_text = subprocess.run([sys.executable, "-m", "bench", "peers", "--help"], cwd=ROOT, capture_output=True,
                               text=True, timeout=120, env=bare)
    assert help_text.returncode == 0 and "--quick" in help_text.stdout, help_text.stderr


def test_the_best_points_are_confirmed_and_every_trace_is_scored_with_the_confirmed_figure(quick_bench):
    result, _, _ = quick_bench
    search = result["search"]["softmax"]
    assert search["confirmed"] == {"top": 3, "measurements_each": 3}
    rows = {json.dumps(r["params"], sort_keys=True): r for r in result["table"]["softmax"]
            if r["shape"] == search["shape"]}
    best = rows[json.dumps(search["best_known"]["params"], sort_keys=True)]
    assert len(best["scores"]) == 3
    assert best["result"]["score"] == pytest.approx(sorted(best["scores"])[1])
    for entry in search["searchers"].values():
        for run in entry["runs"].values():
            for params, score in run["trace"]:
                row = rows.get(json.dumps(params, sort_keys=True))
                if row is not None:
                    assert score == row["result"]["score"]


def test_at_a_kernel_shape_other_than_the_search_shape_a_swarm_run_there_starts_from_the_searchs_lessons(quick_bench):
    result, _, docs = quick_bench
    at_search, elsewhere = result["kernels"]["softmax"]["32x256"], result["kernels"]["softmax"]["64x256"]
    assert "shape_run" not in at_search
    run = elsewhere["shape_run"]
    assert run["status"] == "ok" and run["shape"] == "64x256" and len(run["trace"]) == 2
    rows = {json.dumps(r["params"], sort_keys=True): r for r in result["table"]["softmax"] if r["shape"] == "64x256"}
    best = rows[json.dumps(run["best"]["params"], sort_keys=True)]
    assert run["best"]["score"] == best["result"]["score"] == max(r["result"]["score"] for r in rows.values())
    assert len(best["scores"]) == 3, "the kernel compared was confirmed at its own shape"
    assert elsewhere["params"] == run["best"]["params"]
    assert elsewhere["origin"].startswith("the best at 64x256 of a swarm run there")
    assert "softmax at 64x256: a swarm run there with the search's lessons" in docs.read_text()
