"""A family member as a KernelBench-format problem file: self-contained, runnable the way
the own-ops capture runs it, and computing exactly what the family computes."""
import ast

import pytest
import torch

from kernels.models.problem import problem_source


def _run(source):
    """As the capture child does it: exec in a fresh namespace that is not in sys.modules."""
    ns = {"__name__": "problem", "__file__": "problem.py"}
    exec(compile(source, "problem.py", "exec"), ns)
    model = ns["Model"](*ns["get_init_inputs"]()).eval()
    inputs = ns["get_inputs"]()
    with torch.no_grad():
        return model(*inputs), inputs, ns


@pytest.mark.parametrize("phase, shapes", [("prefill", dict(batch=2, seq=7)), ("decode", dict(batch=1, past=5))])
def test_the_problem_file_runs_and_matches_the_family(tiny, tiny_lm, phase, shapes):
    out, inputs, _ = _run(problem_source(tiny, phase, **shapes))
    with torch.no_grad():
        want = tiny_lm.prefill(*inputs) if phase == "prefill" else tiny_lm.decode(*inputs)
    assert len(out) == 2
    for got, ref in zip(out, want):
        assert torch.equal(got, ref)
    if phase == "prefill":
        assert inputs[0].shape == (2, 7, 64) and out[1].shape == (2, 2, 2, 2, 7, 16)
    else:
        assert [tuple(t.shape) for t in inputs] == [(1, 1, 64), (2, 2, 1, 2, 5, 16)]


def test_the_file_imports_only_torch_and_the_standard_library(tiny):
    tree = ast.parse(problem_source(tiny, "prefill", batch=1, seq=4))
    modules = {n.module if isinstance(n, ast.ImportFrom) else a.name
               for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
               for a in (n.names if isinstance(n, ast.Import) else [None])}
    assert {m.split(".")[0] for m in modules} <= {"math", "dataclasses", "torch"}
    assert "open(" not in ast.unparse(tree)


def test_every_size_is_a_module_constant_a_shape_override_can_change(tiny):
    source = problem_source(tiny, "prefill", batch=1, seq=4)
    constants = {n.targets[0].id: n.value.value for n in ast.parse(source).body
                 if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)}
    assert {k: constants[k] for k in ("HIDDEN", "HEADS", "KV_HEADS", "FFN", "LAYERS", "VOCAB", "BATCH", "SEQ")} == \
        dict(HIDDEN=64, HEADS=4, KV_HEADS=2, FFN=160, LAYERS=2, VOCAB=128, BATCH=1, SEQ=4)
    out, inputs, _ = _run(source.replace("\nSEQ = 4\n", "\nSEQ = 3\n"))
    assert out[0].shape == (1, 3, 128)


def test_the_seed_picks_the_weights(tiny):
    a, _, _ = _run(problem_source(tiny, "prefill", batch=1, seq=3))
    b, _, _ = _run(problem_source(tiny, "prefill", batch=1, seq=3).replace("\nSEED = 0\n", "\nSEED = 7\n"))
    assert not torch.equal(a[0], b[0])


@pytest.mark.parametrize("phase, shapes, message", [
    ("train", dict(batch=1, seq=2), "phase must be one of"),
    ("prefill", dict(batch=1), "missing: seq"),
    ("decode", dict(batch=1, seq=2), "unknown: seq; missing: past"),
    ("prefill", dict(batch=0, seq=2), "batch must be a positive integer"),
    ("decode", dict(batch=1, past=2048), "needs 2049 positions"),
])
def test_bad_phases_and_shapes_are_refused(tiny, phase, shapes, message):
    with pytest.raises(ValueError, match=message):
        problem_source(tiny, phase, **shapes)


def test_the_problem_file_is_the_family_module_text(tiny):
    import kernels.models.decoder as family
    source = problem_source(tiny, "decode", batch=1, past=1)
    assert open(family.__file__).read() in source
