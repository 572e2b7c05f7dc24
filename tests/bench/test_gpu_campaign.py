"""The GPU campaign's dry run (a fake device): every step runs, every point is compiled and
audited for real, the JSON has its shape, and a second call skips what the first finished."""
import json

import pytest

from bench import gpu_campaign
from kernels.targets.cuda import nvcc_path

pytestmark = pytest.mark.skipif(nvcc_path() is None, reason="nvcc is not installed on this host")


def _run(tmp_path, *extra):
    state, out = tmp_path / "state", tmp_path / "out"
    assert gpu_campaign.main(["--dry-run", "--state", str(state), "--out", str(out), *extra]) == 0
    return json.loads((out / "gpu-campaign.json").read_text()), (out / "gpu-campaign.log").read_text()


def test_the_dry_run_runs_every_step_and_writes_one_json_and_one_log(tmp_path):
    state, log = _run(tmp_path)
    names = [name for name, _, _ in gpu_campaign.plan()]
    assert list(state["steps"]) == names and state["dry_run"] is True
    assert {k for k, v in state["steps"].items() if v["status"] != "ok"} == set(), \
        {k: v["result"].get("error") for k, v in state["steps"].items() if v["status"] != "ok"}
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["gpu-campaign.json", "gpu-campaign.log"]
    # both targets' fingerprints; every direct point compiled, audited and (fake) checked
    env = state["steps"]["environment"]["result"]
    assert env["ptx"]["fingerprint"]["target"] == "ptx" and env["ptx"]["fingerprint"]["arch"] == "sm_90a"
    for wl in ("softmax", "rmsnorm", "matmul"):
        (res,) = state["steps"][f"direct.{wl}"]["result"].values()
        assert {r["target"] for r in res["rows"]} == {"cuda", "ptx"} and res["fake_device"]
        assert all(r["status"] == "correct" for r in res["rows"]), res["rows"]
        assert {"cuda", "ptx", "ptx_vs_cuda"} <= set(res["best"])
    (kda,) = state["steps"]["direct.kda"]["result"].values()
    assert all(r["params"]["ALGO"] == "chunked" for r in kda["rows"])
    assert {"fla_chunk_kda", "fla_chunk_kda_bf16", "copy"} <= set(kda["baselines"])
    for w, t in gpu_campaign.SWARMS:
        swarm = state["steps"][f"swarm.{w}.{t}"]["result"]
        assert swarm["evaluated"] and {r["status"] for r in swarm["evaluated"]} == {"compiled_only"}
    summary = state["steps"]["summary"]["result"]
    assert set(summary["kda"]) and set(summary["ptx_vs_cuda"]) >= {"softmax 64x256", "matmul 64x64x64"}
    assert "DRY RUN" in log and "| figure | measured | goal |" in log


def test_a_second_call_skips_the_steps_already_done_and_retries_the_rest(tmp_path):
    first, _ = _run(tmp_path, "--only", "environment", "direct.softmax")
    assert set(first["steps"]) == {"environment", "direct.softmax"}
    state_file = tmp_path / "state" / "gpu-campaign.json"
    data = json.loads(state_file.read_text())
    data["steps"]["direct.softmax"]["status"] = "failed"          # as if it had raised
    state_file.write_text(json.dumps(data))
    second, log = _run(tmp_path, "--only", "environment", "direct.softmax", "direct.rmsnorm")
    assert "--- environment: done in an earlier call (ok), skipped" in log
    assert second["steps"]["direct.softmax"]["status"] == "ok" and "direct.rmsnorm" in second["steps"]
    assert len(second["calls"]) == 2
    assert second["steps"]["environment"]["finished"] == first["steps"]["environment"]["finished"]


def test_a_step_that_does_not_fit_the_budget_is_left_for_the_next_call(tmp_path):
    state, log = _run(tmp_path, "--budget", "20", "--only", "environment", "gpu_tests")
    assert "environment" in state["steps"] and "gpu_tests" not in state["steps"]
    assert "a second call runs it" in log


def test_the_summary_prints_the_docs_lines(tmp_path, capsys):
    _run(tmp_path, "--only", "environment", "direct.matmul")
    assert gpu_campaign.main(["--summarize", str(tmp_path / "out" / "gpu-campaign.json")]) == 0
    text = capsys.readouterr().out
    assert "matmul fp32 64x64x64 cuda vs cuBLAS" in text and "DRY RUN" in text
