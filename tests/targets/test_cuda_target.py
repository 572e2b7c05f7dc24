"""The CUDA target without a GPU: every CUDA seed compiles for sm_90 with no spills and
passes the audit; compile errors, spills, device malloc/printf and bad architectures are
reported in plain words; the evaluator ends at ``compiled_only`` with the resources; and the
GPU runner's plumbing works against a NumPy stand-in for CuPy."""
import json
import shutil
from pathlib import Path


import pytest

from kernels import workloads
from kernels.harness.evaluator import EvalSettings, Evaluator
from kernels.spec import Shape
from kernels.targets.base import Artifact, CompileFailure
from kernels.targets.cuda import CudaTarget, nvcc_path, parse_ptxas

needs_nvcc = pytest.mark.skipif(nvcc_path() is None, reason="nvcc is not installed on this host")

TARGET = CudaTarget()
SIG = 'extern "C" __global__ void kernel(const float *x, float *y, int64_t rows, int64_t cols)'


def _seed_cases():
    cases = []
    for name in workloads.names():
        try:
            wl = workloads.get(name)
        except Exception as exc:  # another workload still being written
            cases.append(pytest.param(name, None, id=f"{name}-unimportable",
                                      marks=pytest.mark.skip(reason=f"{name} does not import: {exc}")))
            continue
        tpl = wl.templates.get("cuda")
        if tpl is None:
            cases.append(pytest.param(name, None, id=f"{name}-no-cuda",
                                      marks=pytest.mark.skip(reason=f"{name} has no cuda template yet")))
            continue
        for variant in tpl.variants:
            cases.append(pytest.param(name, variant, id=f"{name}-{variant}"))
    return cases


@needs_nvcc
@pytest.mark.parametrize("workload,variant", _seed_cases())
def test_every_cuda_seed_compiles_for_sm90_without_spills(workload, variant):
    wl = workloads.get(workload)
    tpl = wl.template("cuda")
    try:
        source = tpl.source(variant)
    except FileNotFoundError as exc:
        pytest.skip(f"seed file not written yet: {exc.filename}")
    params = tpl.space.default()
    if tpl.variant_param:
        params[tpl.variant_param] = variant
    art = TARGET.compile(source, params, {"arch": "sm_90"})
    assert isinstance(art, Artifact), f"{art.reason}\n{art.log}"
    res = art.resources
    assert res["registers"] > 0 and res["arch"] == "sm_90"
    assert res["spill_store_bytes"] == 0 and res["spill_load_bytes"] == 0
    audit = TARGET.audit(art, {})
    assert audit.ok, audit.problems
    assert "kernel" in audit.details["functions"]
    if tpl.launch is not None:
        grid, block, shared = tpl.launch(wl.shapes.typical[0], params)
        assert len(grid) == 3 and len(block) == 3 and 1 <= block[0] * block[1] * block[2] <= 1024
        assert shared + res["shared_bytes"] <= 227 * 1024


@needs_nvcc
def test_softmax_cuda_space_corners_compile_cleanly():
    from concurrent.futures import ThreadPoolExecutor
    tpl = workloads.get("softmax").template("cuda")
    points = [{"ALGO": v, "BLOCK": b, "VEC": w} for v in tpl.variants for b in (128, 1024) for w in (1, 4)]
    assert all(not tpl.space.violations(p) for p in points)
    with ThreadPoolExecutor(4) as pool:  # each compile is its own sandboxed nvcc process
        arts = list(pool.map(lambda p: TARGET.compile(tpl.source(p["ALGO"]), p, {}), points))
    for point, art in zip(points, arts):
        assert isinstance(art, Artifact), (point, art.reason)
        assert TARGET.audit(art, {}).ok, (point, TARGET.audit(art, {}).problems)


@needs_nvcc
def test_a_compile_error_is_a_failure_naming_the_error():
    src = f"#include <stdint.h>\n{SIG} {{\n    y[0] = x[0] + not_declared;\n}}\n"
    out = TARGET.compile(src, {}, {})
    assert isinstance(out, CompileFailure)
    assert "not_declared" in out.reason and "error" in out.reason
    assert out.reason.startswith("the compiler rejected the source: kernel(3)")  # #line keeps lines
    assert "not_declared" in out.log


@needs_nvcc
def test_a_kernel_that_spills_fails_the_audit_with_the_spill_sentence():
    src = f"""#include <stdint.h>
#define N 64
{SIG.replace('__global__', '__global__ __launch_bounds__(1024, 2)')} {{
    float acc[N];
#pragma unroll
    for (int k = 0; k < N; k++) acc[k] = x[k * cols + threadIdx.x];
#pragma unroll
    for (int it = 0; it < 4; it++) {{
#pragma unroll
        for (int k = 0; k < N; k++) acc[k] = acc[k] * acc[(k + 1) % N] + acc[(k + 7) % N];
    }}
    float s = 0;
#pragma unroll
    for (int k = 0; k < N; k++) s += acc[k];
    y[threadIdx.x] = s;
}}
"""
    art = TARGET.compile(src, {}, {})
    assert isinstance(art, Artifact), art.reason
    assert art.resources["spill_store_bytes"] > 0
    audit = TARGET.audit(art, {})
    assert not audit.ok
    assert any("bytes of register spills" in p and "limit 0" in p for p in audit.problems), audit.problems
    assert TARGET.audit(art, {"max_spill_bytes": 1 << 20}).ok


@needs_nvcc
def test_device_malloc_and_printf_fail_the_audit():
    src = f"""#include <stdint.h>
#include <cstdio>
{SIG} {{
    float *p = (float *)malloc(16);
    p[0] = x[0];
    printf("%f", p[0]);
    y[0] = p[0];
}}
"""
    art = TARGET.compile(src, {}, {})
    assert isinstance(art, Artifact), art.reason
    audit = TARGET.audit(art, {})
    assert not audit.ok
    assert any("malloc" in p and "vprintf" in p for p in audit.problems), audit.problems


@needs_nvcc
def test_resource_limits_are_plain_sentences():
    tpl = workloads.get("softmax").template("cuda")
    art = TARGET.compile(tpl.source("rowwise"), {**tpl.space.default(), "ALGO": "rowwise"}, {})
    audit = TARGET.audit(art, {"max_registers": 8, "max_shared_bytes": 16, "max_stack_bytes": -1})
    text = " | ".join(audit.problems)
    assert f"uses {art.resources['registers']} registers per thread (limit 8)" in text
    assert "bytes of static shared memory (limit 16 on sm_90)" in text
    assert "bytes of stack per thread (limit -1)" in text


@needs_nvcc
def test_a_kernel_without_the_extern_c_entry_fails_the_audit():
    art = TARGET.compile("__global__ void kernel(float *y) { y[0] = 1.0f; }", {}, {})
    assert isinstance(art, Artifact), art.reason
    audit = TARGET.audit(art, {})
    assert not audit.ok and "does not export the entry point 'kernel'" in audit.problems[0]
    assert "extern \"C\"" in audit.problems[0]


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm90", "compute_90", "sm_90; rm -rf /", "", "SM_90"])
def test_an_invalid_arch_is_a_compile_failure(arch):
    src = f"#include <stdint.h>\n{SIG} {{ y[0] = x[0]; }}\n"
    out = TARGET.compile(src, {}, {"arch": arch} if arch else {"arch": 90})
    assert isinstance(out, CompileFailure)
    assert "architecture" in out.reason


@needs_nvcc
def test_an_arch_nvcc_does_not_know_is_a_compile_failure():
    out = TARGET.compile(f"#include <stdint.h>\n{SIG} {{ y[0] = x[0]; }}\n", {}, {"arch": "sm_1"})
    assert isinstance(out, CompileFailure) and "sm_1" in out.reason


@needs_nvcc
def test_builds_are_cached_by_source_params_and_flags(tmp_path, monkeypatch):
    monkeypatch.setenv("INT21_CACHE_DIR", str(tmp_path))    # a cache of its own: other tests build these too
    tpl = workloads.get("softmax").template("cuda")
    params = {**tpl.space.default(), "ALGO": "warp"}
    first = TARGET.compile(tpl.source("warp"), params, {})
    assert not first.cached
    again = TARGET.compile(tpl.source("warp"), params, {})
    assert again.cached and again.path == first.path and again.resources == first.resources
    other = TARGET.compile(tpl.source("warp"), {**params, "BLOCK": 512}, {})
    assert not other.cached and other.path != first.path
    fast = TARGET.compile(tpl.source("warp"), params, {"fast_math": True})
    assert fast.path != first.path


def test_the_ptxas_report_is_parsed_for_the_entry_only():
    log = """ptxas info    : 16 bytes gmem
ptxas info    : Compiling entry function 'other' for 'sm_90'
ptxas info    : Function properties for other
    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 200 registers, used 0 barriers
ptxas info    : Function properties for helper
    64 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function 'kernel' for 'sm_90'
ptxas info    : Function properties for kernel
ptxas         .     32 bytes stack frame, 12 bytes spill stores, 20 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 96 bytes cumulative stack size, 4096 bytes smem, 384 bytes cmem[0], 64 bytes cmem[3]
"""
    res = parse_ptxas(log)
    assert res == {"global_bytes": 16, "ptxas_arch": "sm_90", "stack_bytes": 32, "spill_store_bytes": 12,
                   "spill_load_bytes": 20, "registers": 40, "barriers": 1, "cumulative_stack_bytes": 96,
                   "shared_bytes": 4096, "param_const_bytes": 384, "const_bytes": 64}
    assert parse_ptxas("nothing here") == {}


@needs_nvcc
def test_can_run_says_why_not_and_never_raises(monkeypatch):
    ok, why = TARGET.can_run()
    if ok:
        pytest.skip("this host has a CUDA GPU")
    assert why.startswith("no CUDA GPU on this host (") and why.endswith(")")
    import kernels.targets.cuda as mod

    def boom():
        raise OSError("driver exploded")
    monkeypatch.setattr(mod, "_gpu_info", boom)
    ok, why = TARGET.can_run()
    assert not ok and "driver exploded" in why
    fp = TARGET.fingerprint()
    assert fp["target"] == "cuda" and fp["gpu"] is None and fp["arch"] == "sm_90" and fp["nvcc"]


def test_available_names_the_missing_compiler(monkeypatch):
    import kernels.targets.cuda as mod
    monkeypatch.setattr(mod, "_backend", lambda: None)
    ok, why = TARGET.available()
    assert not ok and "nvcc" in why


def test_the_runner_imports_without_cupy():
    import kernels.targets.cuda_runner as runner
    assert callable(runner.serve)


@needs_nvcc
@pytest.mark.parametrize("variant", ["rowwise", "warp"])
def test_the_evaluator_ends_at_compiled_only_with_resources(variant):
    if TARGET.can_run()[0]:
        pytest.skip("this host has a CUDA GPU: the evaluator runs the kernel")
    wl = workloads.get("softmax")
    tpl = wl.template("cuda")
    params = {**tpl.space.default(), "ALGO": variant}
    outcome = Evaluator(EvalSettings()).evaluate(tpl.source(variant), params, "softmax", "cuda")
    assert outcome.status == "compiled_only", outcome.reason
    assert [(s.name, s.status) for s in outcome.stages][:3] == [
        ("static", "passed"), ("compile", "passed"), ("audit", "passed")]
    assert outcome.stage("correctness").status == "skipped"
    assert "no CUDA GPU" in outcome.reason
    assert outcome.resources["registers"] > 0 and outcome.resources["spill_store_bytes"] == 0
    assert outcome.resources["arch"] == "sm_90"
    assert outcome.fingerprint["target"] == "cuda"


@needs_nvcc
def test_the_evaluator_reports_a_spilling_kernel_as_audit_failed():
    src = """#include <stdint.h>
extern "C" __global__ __launch_bounds__(1024, 2) void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    float acc[64];
#pragma unroll
    for (int k = 0; k < 64; k++) acc[k] = x[k * cols + threadIdx.x];
#pragma unroll
    for (int it = 0; it < 4; it++) {
#pragma unroll
        for (int k = 0; k < 64; k++) acc[k] = acc[k] * acc[(k + 1) % 64] + acc[(k + 7) % 64];
    }
    float s = 0;
#pragma unroll
    for (int k = 0; k < 64; k++) s += acc[k];
    y[threadIdx.x] = s;
}
"""
    outcome = Evaluator(EvalSettings()).evaluate(src, {}, "softmax", "cuda")
    assert outcome.status == "audit_failed", outcome.reason
    assert "register spills" in outcome.reason
    assert outcome.resources["spill_store_bytes"] > 0


@needs_nvcc
def test_nvcc_is_found_where_the_target_looks():
    assert shutil.which("nvcc") or nvcc_path()


# --------------------------------------------------------------------------- the device process
# The GPU side of the sandbox, driven end to end by the real evaluator with a NumPy stand-in
# for CuPy (tests/targets/fake_device) on the device process's import path: no GPU is needed
# to check guards, poisoning, uploads, the timing loop and the verdicts. Real launches, events
# and faults are what the GPU campaign (bench/) checks on a GPU host.

FAKE = Path(__file__).with_name("fake_device")


@pytest.fixture
def fake_gpu(monkeypatch):
    """The evaluator's process sees a GPU; its device processes import the stand-in."""
    from kernels.targets import cuda
    monkeypatch.setenv("INT21_SANDBOX_PYTHONPATH", str(FAKE))
    monkeypatch.setattr(cuda, "_gpu_info", lambda: ({"gpu": "Fake H200", "sm": "sm_90"}, ""))

    def run(kernel: str, max_threads: int = 1024, target: str = "cuda"):
        (FAKE / "settings.json").write_text(json.dumps({"kernel": kernel, "max_threads": max_threads}))
        wl = workloads.get("softmax")
        tpl = wl.template(target)
        source, params = tpl.seeds()[0]
        settings = EvalSettings(timing_shape=Shape.of(rows=64, cols=256), typical_checks=False, seeds=2,
                                launcher="spawn", min_calls=5, timing_budget_s=0.5)
        return Evaluator(settings).evaluate(source, params, wl, target)
    yield run
    (FAKE / "settings.json").unlink(missing_ok=True)


@needs_nvcc
def test_a_correct_kernel_passes_every_stage_and_is_timed_by_the_device(fake_gpu):
    outcome = fake_gpu("softmax")
    assert outcome.status == "ok", outcome.reason
    assert outcome.timings["candidate"]["n"] >= TARGET.min_timed_calls   # a GPU floor over the goal's 5
    assert "cupy" in outcome.speedup
    assert outcome.stage("correctness").details["isolation"]


@needs_nvcc
def test_a_ptx_candidate_runs_through_the_same_device_process_and_verdicts(fake_gpu):
    from kernels import targets
    if not targets.get("ptx").available()[0]:
        pytest.skip("no ptxas")
    assert fake_gpu("softmax", target="ptx").status == "ok"
    assert fake_gpu("nothing", target="ptx").status == "wrong"


@needs_nvcc
def test_a_kernel_that_caches_by_input_address_is_wrong(fake_gpu):
    outcome = fake_gpu("caches")
    assert outcome.status == "wrong", outcome.reason


@needs_nvcc
def test_an_input_write_is_reported(fake_gpu):
    outcome = fake_gpu("scribbles")
    assert outcome.status == "wrong" and "input x was modified" in outcome.reason


@needs_nvcc
def test_an_out_of_bounds_write_hits_the_guard(fake_gpu):
    outcome = fake_gpu("past_the_end")
    assert outcome.status == "wrong" and "out of bounds" in outcome.reason


@needs_nvcc
def test_a_kernel_that_leaves_outputs_unwritten_is_wrong(fake_gpu):
    outcome = fake_gpu("nothing")
    assert outcome.status == "wrong", outcome.reason


@needs_nvcc
def test_a_kernel_that_changes_after_some_calls_is_caught_while_timed(fake_gpu):
    outcome = fake_gpu("drifts")
    assert outcome.status == "wrong" and "timed call" in outcome.reason.lower()


@needs_nvcc
def test_a_launch_over_the_thread_limit_is_wrong_with_the_numbers(fake_gpu):
    outcome = fake_gpu("softmax", max_threads=128)
    assert outcome.status == "wrong" and "threads per block" in outcome.reason and "128" in outcome.reason
