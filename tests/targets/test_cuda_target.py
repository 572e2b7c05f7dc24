"""The CUDA target without a GPU: every CUDA seed compiles for sm_90 with no spills and
passes the audit; compile errors, spills, device malloc/printf and bad architectures are
reported in plain words; the evaluator ends at ``compiled_only`` with the resources; and the
GPU runner's plumbing works against a NumPy stand-in for CuPy."""
import shutil
import sys
import types

import numpy as np

import pytest

from kernels import workloads
from kernels.harness import sandbox
from kernels.harness.evaluator import EvalSettings, Evaluator, _Case, _judge_correctness
from kernels.harness.verify import compare
from kernels.spec import Shape
from kernels.targets import cuda_runner
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
def test_builds_are_cached_by_source_params_and_flags():
    tpl = workloads.get("softmax").template("cuda")
    params = {**tpl.space.default(), "ALGO": "warp"}
    first = TARGET.compile(tpl.source("warp"), params, {})
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
    assert callable(runner.run)


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


# --------------------------------------------------------------------------- the runner's plumbing
# The GPU side of the sandbox child, driven by a NumPy stand-in for CuPy: no GPU is needed to
# check guards, poisoning, the two runs, the records the evaluator judges and the timing loop.
# Real launches, events and faults are what bench/gpu_check.sh checks on a GPU host.

class _Array(np.ndarray):
    def set(self, a):
        self[...] = a

    def get(self):
        return np.array(self)


def _fake_cupy(kernel_body):
    cp = types.ModuleType("cupy")
    cp.float32, cp.uint32 = np.float32, np.uint32
    cp.empty = lambda n, dtype=np.float32: np.empty(n, dtype=dtype).view(_Array)
    cp.all, cp.stack, cp.asnumpy = np.all, np.stack, np.asarray
    cp.asarray = lambda a: np.array(a).view(_Array)
    cp.array_equal = lambda a, b: np.array_equal(a, b)
    cp.max, cp.sum, cp.exp, cp.subtract, cp.divide = np.max, np.sum, np.exp, np.subtract, np.divide

    class Stream:
        def __init__(self, **kw):
            self.ptr = 0

        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False

        def synchronize(self):
            pass

    class Event:
        def record(self, stream=None):
            import time
            self.t = time.perf_counter()

        def synchronize(self):
            pass

    class Function:
        max_threads_per_block, max_dynamic_shared_size_bytes, num_regs = 1024, 48 * 1024, 32

        def __call__(self, grid, block, args, shared_mem=0):
            assert isinstance(args[2], np.int64) and isinstance(args[3], np.int64)
            kernel_body(*args)

    class RawModule:
        def __init__(self, path):
            self.path = path

        def get_function(self, name):
            assert name == "kernel"
            return Function()

    class Device:
        def __init__(self, i=0):
            self.id = i

        def use(self):
            pass

    cuda = types.SimpleNamespace(
        Stream=Stream, Event=Event, Device=Device,
        get_elapsed_time=lambda a, b: (b.t - a.t) * 1e3,
        runtime=types.SimpleNamespace(getDeviceProperties=lambda i: {"name": b"Fake H200", "major": 9,
                                                                     "minor": 0, "l2CacheSize": 1 << 20}))
    cp.cuda, cp.RawModule = cuda, RawModule
    return cp


def _softmax(x, y, rows, cols):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    y[...] = e / e.sum(axis=1, keepdims=True)


def _plan(tmp_path, wl, monkeypatch):
    ev = Evaluator(EvalSettings(seeds=2))
    monkeypatch.chdir(tmp_path)
    cases = ev._cases(wl)
    for c in cases:
        ev._materialise(wl, c, tmp_path)
    tcase = ev._cases(wl)[0]
    tcase.id, tcase.shape = "timing", Shape.of(rows=64, cols=256)
    ev._materialise(wl, tcase, tmp_path)
    tcase.alt = _Case("timingb", "typical", tcase.shape, wl.distributions[0], 9002)
    ev._materialise(wl, tcase.alt, tmp_path, derive_from=tcase)
    tpl = wl.template("cuda")
    params = tpl.space.default()

    def launch(c):
        grid, block, shared = tpl.launch(c.shape, params)
        return {"grid": list(grid), "block": list(block), "shared": shared}
    plan = {
        "target": "cuda", "artifact": "kernel.cubin", "entry": "kernel",
        "args": [{"name": a.name, "kind": a.kind} for a in wl.args],
        "cases": [{**ev._plan_case(wl, c), "launch": launch(c)} for c in cases],
        "timing": {"case": {**ev._plan_case(wl, tcase), "launch": launch(tcase)}, "baselines": [
            {"name": "cupy", "fn": "kernels.workloads.softmax.baselines_cuda:cupy_softmax", "requires": "cupy"}],
            "min_calls": 5, "max_calls": 200, "budget_seconds": 1.0, "warmup": 1},
    }
    return cases, tcase, plan


def _run(plan, kernel_body, monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(kernel_body))
    records = [{"kind": "hello"}]
    cuda_runner.run(plan, lambda kind, **f: records.append({"kind": kind, **f}))
    records.append({"kind": "done"})
    return sandbox.ProcessResult(returncode=0, timed_out=False, seconds=0.1, records=records)


@pytest.fixture
def softmax():
    return workloads.get("softmax")


def test_a_correct_kernel_passes_the_evaluators_judges(tmp_path, monkeypatch, softmax):
    cases, tcase, plan = _plan(tmp_path, softmax, monkeypatch)
    run = _run(plan, _softmax, monkeypatch)
    assert _judge_correctness(softmax, cases, run, softmax.tolerance, tmp_path) is None
    kinds = [r["kind"] for r in run.records]
    assert kinds.count("call") == 2 * len(cases) and kinds.count("case") == len(cases)
    assert any(r["kind"] == "device" and r["gpu"] == "Fake H200" for r in run.records)
    timing = next(r for r in run.records if r["kind"] == "timing")
    assert timing["problems"] == [] and timing["mismatch_at_call"] is None
    assert timing["timed_calls"] >= cuda_runner.MIN_GPU_CALLS  # a GPU floor over the plan's 5
    assert set(timing["samples"]) == {"candidate", "cupy"}
    assert np.load(tmp_path / timing["outputs"]["y"]).shape == (64, 256)
    # the first call on each timing data set is saved for the evaluator to verify
    for key, case in (("outputs", tcase), ("outputs_b", tcase.alt)):
        assert compare(np.load(tmp_path / timing[key]["y"]), case.reference["y"], softmax.tolerance)["passed"]


def test_a_kernel_that_caches_by_input_address_fails_on_the_second_data_set(tmp_path, monkeypatch, softmax):
    _, tcase, plan = _plan(tmp_path, softmax, monkeypatch)
    cache = {}

    def caches(x, y, rows, cols):
        key = (x.__array_interface__["data"][0], float(x[0, 0]), float(x[-1, -1]))
        if key not in cache:
            _softmax(x, y, rows, cols)
            cache[key] = y.copy()
        y[...] = cache[key]
    run = _run(plan, caches, monkeypatch)
    timing = next(r for r in run.records if r["kind"] == "timing")
    assert compare(np.load(tmp_path / timing["outputs"]["y"]), tcase.reference["y"], softmax.tolerance)["passed"]
    assert not compare(np.load(tmp_path / timing["outputs_b"]["y"]), tcase.alt.reference["y"],
                       softmax.tolerance)["passed"]


def test_an_input_write_is_reported(tmp_path, monkeypatch, softmax):
    cases, _, plan = _plan(tmp_path, softmax, monkeypatch)

    def scribbles(x, y, rows, cols):
        _softmax(x, y, rows, cols)
        x[0, 0] += 1.0
    run = _run(plan, scribbles, monkeypatch)
    verdict = _judge_correctness(softmax, cases, run, softmax.tolerance, tmp_path)
    assert verdict[0] == "wrong" and "input x was modified" in verdict[1]


def test_an_out_of_bounds_write_hits_the_guard(tmp_path, monkeypatch, softmax):
    cases, _, plan = _plan(tmp_path, softmax, monkeypatch)

    def past_the_end(x, y, rows, cols):
        _softmax(x, y, rows, cols)
        guarded = y.base  # NumPy views point at the owner: the whole guarded allocation
        assert guarded.size > y.size
        guarded.view(np.float32)[-1] = 0.0
    run = _run(plan, past_the_end, monkeypatch)
    verdict = _judge_correctness(softmax, cases, run, softmax.tolerance, tmp_path)
    assert verdict[0] == "wrong" and "out of bounds" in verdict[1]


def test_a_kernel_that_leaves_outputs_unwritten_is_wrong(tmp_path, monkeypatch, softmax):
    cases, _, plan = _plan(tmp_path, softmax, monkeypatch)
    run = _run(plan, lambda x, y, rows, cols: None, monkeypatch)
    verdict = _judge_correctness(softmax, cases, run, softmax.tolerance, tmp_path)
    assert verdict[0] == "wrong"


def test_a_kernel_that_changes_after_some_calls_is_caught_while_timed(tmp_path, monkeypatch, softmax):
    _, _, plan = _plan(tmp_path, softmax, monkeypatch)
    calls = {"n": 0}

    def drifts(x, y, rows, cols):
        calls["n"] += 1
        _softmax(x, y, rows, cols)
        if calls["n"] > 60:
            y[0, 0] = 0.5
    run = _run(plan, drifts, monkeypatch)
    timing = next(r for r in run.records if r["kind"] == "timing")
    assert timing["mismatch_at_call"] is not None


def test_a_launch_over_the_thread_limit_is_a_case_problem(tmp_path, monkeypatch, softmax):
    _, _, plan = _plan(tmp_path, softmax, monkeypatch)
    plan["cases"][0]["launch"]["block"] = [2048, 1, 1]
    run = _run(plan, _softmax, monkeypatch)
    rec = next(r for r in run.records if r["kind"] == "case" and r["id"] == plan["cases"][0]["id"])
    assert "2048 threads per block" in rec["problems"][0]
