"""The PTX target without a GPU: every PTX seed, and a sample of every legal point of its
space, passes the static rules and assembles for sm_90a with no spills and a clean audit;
the template step does exactly what its docstring says and fails in plain words; the
evaluator ends at ``compiled_only`` with the resources."""
import random

import pytest

from kernels import workloads
from kernels.harness.static import check_source
from kernels.targets import get as get_target
from kernels.targets.base import Artifact, CompileFailure
from kernels.targets.ptx import PtxTarget, ptxas_path
from kernels.targets.ptx_template import TemplateError, expand, expand_lines

needs_ptxas = pytest.mark.skipif(ptxas_path() is None, reason="ptxas is not installed on this host")
TARGET = PtxTarget()
SAMPLES = 24      # random legal points per workload, beyond the seeds (all of them: see docs/gpu.md)

TINY = """.version 8.0
.target {{ARCH}}
.address_size 64
.visible .entry kernel(.param .u64 x, .param .u64 y, .param .u64 rows, .param .u64 cols)
{
	.reg .f32 %f;
	.reg .b64 %p;
	ld.param.u64 %p, [y];
	cvta.to.global.u64 %p, %p;
	mov.f32 %f, 0f3F800000;
@if STORE == 1
	st.global.cs.f32 [%p], %f;
@else
	st.global.f32 [%p], %f;
@endif
	ret;
}
"""


def _ptx_workloads():
    return [n for n in workloads.names() if "ptx" in workloads.get(n).templates]


def _points(name):
    wl = workloads.get(name)
    tpl = wl.template("ptx")
    shape = wl.shapes.typical[0]
    points = [p for _, p in tpl.seeds()]
    rng = random.Random(f"ptx:{name}")
    for _ in range(SAMPLES):
        p = tpl.space.sample(rng, [shape])
        if p is not None and p not in points:
            points.append(p)
    return [pytest.param(name, p, id=f"{name}-{i}") for i, p in enumerate(points)]


def test_softmax_rmsnorm_and_matmul_have_ptx_seeds():
    assert {"softmax", "rmsnorm", "matmul"} <= set(_ptx_workloads())
    assert get_target("ptx").language == "ptx"


@needs_ptxas
@pytest.mark.parametrize("workload,params", [p for n in _ptx_workloads() for p in _points(n)])
def test_every_ptx_seed_and_sampled_point_assembles_for_sm90a_without_spills(workload, params):
    wl = workloads.get(workload)
    tpl = wl.template("ptx")
    assert not tpl.space.violations(params, [wl.shapes.typical[0]])
    source = tpl.source(tpl.variant_of(params))
    assert check_source(source, "ptx") == []
    art = TARGET.compile(source, params, {})
    assert isinstance(art, Artifact), f"{art.reason}\n{art.log[-3000:]}"
    res = art.resources
    assert res["arch"] == "sm_90a" and res["ptxas_arch"] == "sm_90a" and res["registers"] > 0
    assert res["spill_store_bytes"] == 0 and res["spill_load_bytes"] == 0 and res["stack_bytes"] == 0
    audit = TARGET.audit(art, {})
    assert audit.ok, audit.problems
    # rcp.rn/div.rn bring ptxas's own slow-path helper (a local function), nothing imported
    assert "kernel" in audit.details["functions"] and audit.details["imports"] == []
    grid, block, shared = tpl.launch(wl.shapes.typical[0], params)
    assert len(grid) == 3 and 32 <= block[0] * block[1] * block[2] <= 1024
    assert shared + res["shared_bytes"] <= 48 * 1024


@needs_ptxas
@pytest.mark.parametrize("workload", ["softmax", "rmsnorm", "matmul"])
def test_the_evaluator_ends_a_ptx_seed_at_compiled_only_with_resources(workload):
    from kernels.harness.evaluator import EvalSettings, Evaluator
    if TARGET.can_run()[0]:
        pytest.skip("this host has a GPU: the evaluator runs the kernel")
    tpl = workloads.get(workload).template("ptx")
    source, params = tpl.seeds()[0]
    outcome = Evaluator(EvalSettings()).evaluate(source, params, workload, "ptx")
    assert outcome.status == "compiled_only", outcome.reason
    assert [(s.name, s.status) for s in outcome.stages][:3] == [
        ("static", "passed"), ("compile", "passed"), ("audit", "passed")]
    assert outcome.resources["arch"] == "sm_90a" and outcome.fingerprint["target"] == "ptx"


@needs_ptxas
def test_the_harness_default_sm90_assembles_for_sm90a_and_other_archs_are_kept():
    assert TARGET.arch_for(None) == "sm_90a" and TARGET.arch_for("sm_90") == "sm_90a"
    assert TARGET.arch_for("sm_90a") == "sm_90a" and TARGET.arch_for("sm_80") == "sm_80"
    art = TARGET.compile(TINY, {"STORE": 1}, {"arch": "sm_90"})
    assert isinstance(art, Artifact) and art.resources["arch"] == "sm_90a"
    old = TARGET.compile(TINY, {"STORE": 0}, {"arch": "sm_80"})
    assert isinstance(old, Artifact) and old.resources["ptxas_arch"] == "sm_80"


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm90", "compute_90", "sm_90; rm -rf /", 90])
def test_an_invalid_arch_is_a_compile_failure(arch):
    out = TARGET.compile(TINY, {"STORE": 0}, {"arch": arch})
    assert isinstance(out, CompileFailure) and "architecture" in out.reason


@needs_ptxas
def test_an_assembly_error_names_the_template_line():
    bad = TINY.replace("\tret;", "\tretx;")
    out = TARGET.compile(bad, {"STORE": 0}, {})
    assert isinstance(out, CompileFailure) and not out.refused
    assert "retx" in out.reason and "line 12 (template line 16)" in out.reason


@needs_ptxas
def test_builds_are_cached_by_text_and_params():
    first = TARGET.compile(TINY, {"STORE": 0}, {})
    again = TARGET.compile(TINY, {"STORE": 0}, {})
    other = TARGET.compile(TINY, {"STORE": 1}, {})
    assert again.cached and again.path == first.path and other.path != first.path


@needs_ptxas
def test_the_resource_limits_hold_as_for_cuda():
    art = TARGET.compile(TINY, {"STORE": 0}, {})
    audit = TARGET.audit(art, {"max_registers": 1})
    assert not audit.ok and "registers per thread (limit 1)" in audit.problems[0]


def test_the_fingerprint_and_availability_are_the_ptx_targets():
    fp = TARGET.fingerprint()
    assert fp["target"] == "ptx" and fp["arch"] in ("sm_90a",) or fp.get("gpu")
    ok, why = TARGET.can_run()
    assert isinstance(ok, bool) and (ok or why.startswith("no CUDA GPU on this host"))
    assert TARGET.natural_values(None) == {}
    assert TARGET.timer == "device" and TARGET.min_timed_calls >= 100   # the CUDA target's runner


def test_available_names_the_missing_assembler(monkeypatch):
    import kernels.targets.ptx as mod
    monkeypatch.setattr(mod, "ptxas_path", lambda: None)
    ok, why = TARGET.available()
    assert not ok and "ptxas" in why
    out = TARGET.compile(TINY, {}, {})
    assert isinstance(out, CompileFailure) and "ptxas" in out.reason


# --------------------------------------------------------------------------- the template step

def test_if_elif_else_keep_the_first_true_branch():
    text = "@if A == 1\none\n@elif A == 2\ntwo\n@else\nother\n@endif\nend"
    assert [expand(text, {"A": a}, "sm_90a") for a in (1, 2, 3)] == ["one\nend", "two\nend", "other\nend"]


def test_for_repeats_with_its_name_and_placeholders_compute_integers():
    text = "@for i in range(1, 7, 2)\n  r{{i * 4}}, [%p+{{i * BLOCK}}]\n@endfor"
    assert expand(text, {"BLOCK": 32}, "sm_90a") == "  r4, [%p+32]\n  r12, [%p+96]\n  r20, [%p+160]"


def test_define_and_set_are_seen_after_the_branch_that_made_them():
    text = "@if LOAD == 1\n@define LD ld.global.nc\n@else\n@define LD ld.global\n@endif\n@set W = 2 * B\n{{LD}}.f32 {{W}}"
    assert expand(text, {"LOAD": 1, "B": 16}, "sm_90a") == "ld.global.nc.f32 32"


def test_builtins_predicates_and_comments():
    text = ".target {{ARCH}} // sm {{SM}}\n@# a template comment\n\t@%p bra L;\n\t@!%p bra M;"
    assert expand(text, {}, "sm_90a") == ".target sm_90a // sm 90\n\t@%p bra L;\n\t@!%p bra M;"


def test_plain_ptx_passes_through_unchanged():
    assert expand(TINY.replace("{{ARCH}}", "sm_90a").split("@if")[0], {}, "sm_90a") == \
        TINY.replace("{{ARCH}}", "sm_90a").split("@if")[0]


def test_the_output_lines_know_their_template_lines():
    text, origins = expand_lines("a\n@for i in range(2)\nb{{i}}\n@endfor\nc", {}, "sm_90a")
    assert text == "a\nb0\nb1\nc" and origins == [1, 3, 3, 5]


@pytest.mark.parametrize("text,message", [
    ("@if A\nx", "never closed"),
    ("@endif", "without an open @if"),
    ("@else\n", "without an open @if"),
    ("@for i in range(2000)\nx\n@endfor", "more than 1024"),
    ("{{NOPE}}", "unknown name"),
    ("{{open", "unclosed"),
    ("@if __import__('os')\n@endif", "may be called"),
    ("@for i in range(3)\n@endif", "without an open @if"),
    ("{{'text'}}", "not an integer"),
    ("@set X == 1", "@set reads"),
])
def test_template_errors_are_plain_sentences(text, message):
    with pytest.raises(TemplateError, match=message):
        expand(text, {"A": 1}, "sm_90a")


@needs_ptxas
def test_a_template_error_is_a_compile_failure_not_a_crash():
    out = TARGET.compile(TINY.replace("@endif\n", ""), {"STORE": 0}, {})
    assert isinstance(out, CompileFailure) and out.reason.startswith("the PTX template did not expand: line")


# --------------------------------------------------------------------------- static rules

@pytest.mark.parametrize("snippet,rule", [
    ("\tret;", None),
    ("\t.extern .shared .align 16 .b8 dyn[];\n\tret;", None),          # dynamic shared memory is fine
    ("\t.pragma \"nounroll\";\n\tret;", None),
    ("\tmov.u32 %r1, %clock;", "timer"),
    ("\tmov.u64 %rd1, %globaltimer_lo;", "timer"),
    ("\tmov.u32 %r1, %envreg3;", "environment"),
    ("\tnanosleep.u32 100;", "sleeps"),
    ("\tld.global.f32 %f1, [0x7f0000001000];", "fixed memory location"),
    ("\t.pragma \"enable_smem_spilling\";", "pragma"),
    ("#include \"/etc/passwd\"", "preprocessor"),
    ("\ttrap;", "stops or signals"),
])
def test_ptx_static_rules(snippet, rule):
    src = TINY.replace("\tret;\n}", snippet + "\n\tret;\n}")
    findings = check_source(src, "ptx")
    if rule is None:
        assert findings == []
    else:
        assert any(rule in f.rule or rule in f.text for f in findings), findings


def test_ptx_must_be_printable_ascii_and_small():
    assert check_source(TINY + "// caf\u00e9\n", "ptx")[0].rule == "encoding"
    assert check_source(TINY + "\x00", "ptx")[0].rule == "encoding"
    assert check_source(TINY + "//" + "x" * 300_000, "ptx")[0].rule == "size"


def test_c_and_cuda_rules_are_unchanged_by_the_ptx_ones():
    # a PTX-only construct in CUDA source is judged by the CUDA rules, as before
    cuda = '#include <stdint.h>\nextern "C" __global__ void kernel(float *y) { y[0] = 1.0f; }\n'
    assert check_source(cuda, "cuda") == []
    assert check_source(cuda, "ptx")[0].rule == "entry point"
