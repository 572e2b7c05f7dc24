"""Every way an import is refused comes back as a value with a reason a user can act on —
never an exception — and nothing is stored."""
import textwrap

from kernels.graph import capture, service

TAIL = '''

def get_inputs():
    return [torch.randn(6, 5)]


def get_init_inputs():
    return []
'''


def problem(forward: str, init: str = "", imports: str = "", tail: str = TAIL) -> str:
    body = textwrap.indent(textwrap.dedent(forward).strip(), " " * 8)
    init_body = textwrap.indent(textwrap.dedent(init).strip(), " " * 8) if init else ""
    return (f"import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n{imports}\n\n"
            f"class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n{init_body}\n\n"
            f"    def forward(self, x):\n{body}\n{tail}")


def refused(src: str, ops_dir) -> capture.CaptureFailure:
    result = service.import_problem(src, ops_dir=ops_dir)
    assert not result.ok and result.failure is not None
    assert not list(ops_dir.glob("*/meta.json")), "a refused import left files in the store"
    return result.failure


def test_a_syntax_error_names_the_line(tmp_path):
    f = refused("import torch\n\nclass Model(:\n    pass\n", tmp_path)
    assert f.kind == "syntax" and f.line == 3 and "line 3" in f.reason


def test_a_file_without_the_format_is_refused(tmp_path):
    f = refused("import torch\n\nclass Model(torch.nn.Module):\n    pass\n", tmp_path)
    assert f.kind == "format" and "get_inputs" in f.reason and "get_init_inputs" in f.reason


def test_an_exception_in_user_code_gives_its_last_line(tmp_path):
    f = refused(problem("return x.reshape(7, 7)"), tmp_path)
    assert f.kind == "user_code"
    assert "RuntimeError" in f.reason and "shape" in f.reason and "problem.py line" in f.reason


def test_an_exception_at_import_time(tmp_path):
    f = refused(problem("return x", imports="raise ValueError('no thanks')"), tmp_path)
    assert f.kind == "user_code" and "ValueError: no thanks" in f.reason and f.line == 4


def test_an_unsupported_op_is_named_with_its_node(tmp_path):
    src = problem("return torch.sort(x, dim=1).values")
    f = refused(src, tmp_path)
    assert f.kind == "unsupported"
    assert f.op == "aten.sort.default" and f.node
    assert "sorting" in f.reason and f.node in f.reason
    assert any(not s["supported"] for s in f.details["survey"])


def test_an_integer_output_is_refused(tmp_path):
    f = refused(problem("return torch.argmax(x, dim=1)"), tmp_path)
    assert f.kind == "unsupported" and "argmax" in f.reason


def test_a_data_dependent_shape_is_refused(tmp_path):
    f = refused(problem("return x[x > 0]"), tmp_path)
    assert f.kind == "dynamic" and "data-dependent" in f.reason


def test_a_non_float32_input_is_refused(tmp_path):
    f = refused(problem("return x * 2", tail=TAIL.replace("torch.randn(6, 5)", "torch.randn(6, 5).double()")),
                tmp_path)
    assert f.kind == "dtype" and "float64" in f.reason


def test_an_integer_input_is_refused(tmp_path):
    f = refused(problem("return x * 2", tail=TAIL.replace("torch.randn(6, 5)", "torch.arange(30).view(6, 5)")),
                tmp_path)
    assert f.kind == "dtype" and "int64" in f.reason and "hidden states" in f.reason


def test_a_model_that_mutates_its_state_is_refused(tmp_path):
    src = problem("self.count.add_(1)\nreturn x * self.count", init="self.register_buffer('count', torch.zeros(1))")
    f = refused(src, tmp_path)
    assert f.kind == "unsupported" and "mutated" in f.reason


def test_a_capture_that_does_not_match_the_model_is_refused_with_numbers(tmp_path):
    # forward changes with every call: the exported graph is not what later calls compute
    src = problem("self.calls += 1\nreturn x * self.calls", init="self.calls = 0")
    f = refused(src, tmp_path)
    assert f.kind == "mismatch"
    assert "does not compute what the model computes" in f.reason and "seed" in f.reason


def test_an_override_of_a_missing_constant_is_refused(tmp_path):
    src = problem("return x * 2") + "\nbatch = 6\n"
    result = service.import_problem(src, overrides={"nope": 3}, ops_dir=tmp_path)
    assert not result.ok and result.failure.kind == "format" and "no module constant 'nope'" in result.failure.reason


def test_a_builtin_name_cannot_be_taken(tmp_path):
    result = service.import_problem(problem("return x * 2"), name="softmax", ops_dir=tmp_path)
    assert not result.ok and "built-in" in result.failure.reason


def test_preview_reports_supported_and_unsupported_nodes_without_storing(tmp_path, monkeypatch):
    monkeypatch.setenv("INT21_OPS_DIR", str(tmp_path))
    src = problem("return torch.sort(x, dim=1).values.relu()")
    p = service.preview(src)
    assert not p.supported and p.failure.kind == "unsupported"
    targets = {s["target"]: s["supported"] for s in p.survey}
    assert targets["aten.sort.default"] is False and targets["aten.relu.default"] is True
    ok = service.preview(problem("return torch.softmax(x, dim=1) * 2"))
    assert ok.supported and ok.groups and ok.groups[0]["family"] == "reduction"
    assert not list(tmp_path.iterdir())


def test_an_embedding_lookup_scattered_over_too_many_runs_of_rows_is_refused(tmp_path):
    """Lookups at positions fixed at capture are rows of the table, as slices (problems/
    positional_embedding.py, causal_mask_buffers.py); a buffer of shuffled indices would be
    one slice per row: refused past EMBEDDING_RUNS runs, naming the node and the count."""
    from kernels.graph.aten_tensor import EMBEDDING_RUNS
    n = 2 * EMBEDDING_RUNS + 2
    tail = TAIL.replace("torch.randn(6, 5)", f"torch.randn({n}, 5)")
    src = problem("return x + self.emb(self.ids)", tail=tail,
                  init=f"self.emb = nn.Embedding({n}, 5)\n"
                       f"self.register_buffer('ids', torch.arange({n}).view(2, -1).t().reshape(-1))")
    f = refused(src, tmp_path)
    assert f.kind == "unsupported" and f.node and f.node in f.reason
    assert "embedding" in f.reason and f"{n} runs" in f.reason, f.reason
