"""The command line: `manage.py evaluate` and `manage.py workloads`, run as a user would."""
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "kernels/workloads/softmax/cpu_two_pass.c"


def manage(*args, timeout=300):
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def test_evaluate_json_prints_exactly_one_object_with_the_promised_fields():
    r = manage("evaluate", "--workload", "softmax", "--target", "cpu", "--source", str(SEED),
               "--param", "THREADS=2", "--param", "VEC=8", "--shape", "512x4096", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert r.stdout.count("\n") == 1
    assert data["status"] == "ok" and data["correct"] is True and data["reason"]
    assert data["median_ms"] > 0 and {"numpy", "torch"} <= set(data["speedup"])
    assert all({"name", "status", "seconds"} <= set(s) for s in data["stages"])


def test_evaluate_exits_zero_for_a_wrong_kernel_and_says_why(tmp_path):
    bad = tmp_path / "zeros.c"
    bad.write_text("#include <stdint.h>\n#include <string.h>\nvoid kernel(const float *x, float *y, int64_t r, "
                   "int64_t c) { memset(y, 0, (size_t)(r * c) * sizeof(float)); }\n")
    r = manage("evaluate", "--workload", "softmax", "--target", "cpu", "--source", str(bad), "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["status"] == "wrong" and data["correct"] is False and "values outside" in data["reason"]


def test_the_readable_report_shows_progress_and_a_verdict():
    r = manage("evaluate", "--workload", "softmax", "--target", "cpu", "--source", str(SEED), "--no-timing")
    assert r.returncode == 0, r.stderr
    assert "softmax on cpu: ok" in r.stdout and "✓ correctness" in r.stderr


def test_unknown_workload_target_or_file_is_a_clear_error(tmp_path):
    r = manage("evaluate", "--workload", "nope", "--target", "cpu", "--source", str(SEED))
    assert r.returncode != 0 and "unknown workload 'nope'" in r.stderr
    r = manage("evaluate", "--workload", "softmax", "--target", "tpu", "--source", str(SEED))
    assert r.returncode != 0 and "unknown target 'tpu'" in r.stderr
    r = manage("evaluate", "--workload", "softmax", "--target", "cpu", "--source", str(tmp_path / "missing.c"))
    assert r.returncode != 0 and "does not exist" in r.stderr


def test_workloads_lists_signatures_and_design_spaces():
    r = manage("workloads", "--json", timeout=120)
    assert r.returncode == 0, r.stderr
    data = {w["name"]: w for w in json.loads(r.stdout)["workloads"]}
    assert data["softmax"]["targets"]["cpu"]["signature"] == \
        "void kernel(const float *x, float *y, int64_t rows, int64_t cols)"
    assert {p["name"] for p in data["softmax"]["targets"]["cpu"]["space"]["params"]} >= {"THREADS", "VEC"}
    r = manage("workloads", timeout=120)
    assert r.returncode == 0 and "softmax" in r.stdout


def test_the_readable_report_sets_the_kernels_bandwidth_beside_a_copy_timed_in_the_same_session():
    r = manage("evaluate", "--workload", "softmax", "--target", "cpu", "--source", str(SEED),
               "--param", "THREADS=2", "--param", "VEC=8", "--shape", "512x4096")
    assert r.returncode == 0, r.stderr
    assert re.search(r"Achieved [\d.]+ GB/s .*— \d+% of a streaming copy timed beside it \([\d.]+ GB/s\)", r.stdout), r.stdout
    assert "copy " not in " ".join(line for line in r.stdout.splitlines() if "candidate is" in line)
