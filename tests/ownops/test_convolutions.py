"""Convolutions, padding, pooling, constant gathers and upsampling (kernels/graph/aten_conv.py,
aten_gather.py): every argument torch takes lands on the same numbers. Each model below
returns many differently configured results at once (one capture in the sandbox each); the
import refuses any whose float64 interpreter leaves torch's float32 outputs, and the
generated kernel is judged by the harness against that interpreter at the problem's awkward
shape."""
import textwrap

import numpy as np
import pytest

from kernels.graph import opset
from kernels.graph.service import import_problem

TAIL = """

def get_inputs():
    return [torch.randn(2, 6, 9, 10)]


def get_init_inputs():
    return []
"""

CONVOLUTIONS = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(3)
        self.c1 = nn.Conv1d(6, 4, 3, stride=2, padding=2, dilation=2)
        self.c2 = nn.Conv2d(6, 6, (2, 3), stride=(1, 3), padding=(0, 1), groups=6)   # depthwise
        self.c3 = nn.Conv2d(6, 8, 1)                                                  # 1x1: no im2col
        self.c4 = nn.Conv2d(6, 4, 3, padding="same", dilation=2, bias=False)
        self.c5 = nn.Conv3d(1, 3, (2, 3, 3), stride=(1, 2, 2), padding=(1, 0, 1))
        self.t1 = nn.ConvTranspose1d(6, 4, 4, stride=3, padding=1, output_padding=2)
        self.t2 = nn.ConvTranspose2d(6, 9, 3, stride=(2, 1), padding=(0, 2), dilation=(1, 2), groups=3)
        self.t3 = nn.ConvTranspose3d(1, 2, 2, stride=2, bias=False)
        self.t4 = nn.ConvTranspose2d(6, 4, 3, stride=2, dilation=2, padding=3)   # even phases have no taps
        self.t5 = nn.ConvTranspose1d(6, 2, 2, stride=4, padding=1, output_padding=3)   # kernel < stride
        self.t6 = nn.ConvTranspose1d(6, 2, 3, stride=40, padding=2)   # more phases than MAX_PHASES: spread

    def forward(self, x):
        rows = x.flatten(2)                                    # [2, 6, 90]
        vol = x[:, :1].unsqueeze(1)                            # [2, 1, 1, 9, 10]
        vol = torch.cat([vol, vol * 0.5, vol - 1.0], dim=2)    # [2, 1, 3, 9, 10]
        return (self.c1(rows), self.c2(x), self.c3(x).relu(), self.c4(x), self.c5(vol),
                self.t1(rows), self.t2(x), self.t3(vol), self.t4(x), self.t5(rows),
                self.t6(rows[..., :5]))
"""

POOLING = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x):
        return (F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True),
                F.max_pool2d(x, (2, 3), stride=1, dilation=(2, 1)),
                F.max_pool1d(x.flatten(2), 4, stride=3, padding=2),
                F.avg_pool2d(x, 3, stride=2, padding=1),
                F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False),
                F.avg_pool2d(x, 2, divisor_override=3),
                F.avg_pool1d(x.flatten(2), 5, stride=4, padding=2, count_include_pad=False),
                F.avg_pool3d(x.unsqueeze(1), (2, 2, 3), stride=(2, 1, 2)),
                F.adaptive_avg_pool2d(x, (3, 5)),
                F.adaptive_max_pool2d(x, (3, 2)),
                F.pad(x, (2, -1, 1, 3), value=-0.25))
"""


RESAMPLING = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x):
        rows = x.flatten(2)
        return (F.pad(x, (2, 1, 3, 2), mode="reflect"),
                F.pad(rows, (3, 4), mode="replicate"),
                torch.roll(x, shifts=(2, -3), dims=(2, 3)),
                x.index_select(1, torch.tensor([4, 0, 0, 5, 1])),
                x[:, [2, 0, 1]] * 2.0,
                x[..., torch.arange(9, -1, -3)],
                F.interpolate(x, scale_factor=2, mode="nearest"),
                F.interpolate(x, size=(7, 13), mode="nearest"),
                F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False),
                F.interpolate(x, size=(5, 17), mode="bilinear", align_corners=True),
                F.interpolate(rows, scale_factor=1.5, mode="linear"),
                F.interpolate(x.unsqueeze(1), scale_factor=(1, 2, 1), mode="trilinear"))
"""


def imported(source, name, tmp_path):
    result = import_problem(textwrap.dedent(source) + TAIL, name=name, ops_dir=tmp_path)
    assert result.ok, result.failure and f"{result.failure.kind}: {result.failure.reason}"
    return result


@pytest.mark.parametrize("source,name,families", [(CONVOLUTIONS, "convolutions", {"matmul", "cat"}),
                                                  (POOLING, "pooling", {"reduction", "cat"}),
                                                  (RESAMPLING, "resampling", {"matmul", "cat"})])
def test_every_form_matches_torch_and_its_kernel_is_judged_correct(source, name, families, tmp_path, monkeypatch):
    monkeypatch.setenv("INT21_OPS_DIR", str(tmp_path))
    result = imported(source, name, tmp_path)
    from kernels.graph import store
    meta = store.read_meta(store.lookup(name))
    reports = [r for s in meta["shapes"] for r in s["check"]]
    assert reports and all(r["passed"] for r in reports)
    assert families <= {g["family"] for g in result.summary["groups"]}
    assert name == "resampling" or "window" in result.summary["graph"]["ops"]
    from kernels import workloads
    from kernels.harness.evaluator import EvalSettings, Evaluator
    wl = workloads.get(name)
    src, params = wl.template("cpu").seeds()[0]
    out = Evaluator(EvalSettings(timing=False)).evaluate(src, params, wl, "cpu")
    assert out.status == "ok", out.reason


def problem(forward: str, init: str = "") -> str:
    return ("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\nclass Model(nn.Module):\n"
            f"    def __init__(self):\n        super().__init__()\n        {init or 'pass'}\n\n"
            f"    def forward(self, x):\n        {forward}\n")


def test_a_one_by_one_convolution_reads_its_input_in_place(tmp_path):
    """No im2col copy where the product can read the input through its strides."""
    result = imported(problem("return self.conv(x)", "self.conv = nn.Conv2d(6, 8, 1)"), "pointwise_conv", tmp_path)
    # the product, and its bias as the epilogue's split form (FUSE 0); no pointwise copy before it
    groups = result.summary["groups"]
    assert sorted(g["family"] for g in groups) == ["matmul", "pointwise"]
    assert groups[0]["family"] == "matmul" and groups[0]["domain"] == [2, 1, 8, 90]


@pytest.mark.parametrize("forward,kind,words", [
    ("return F.avg_pool2d(x, 2, stride=2, ceil_mode=True)", "unsupported", "ceil_mode adds windows past the input"),
    ("return F.pad(x, (1, 1, 1, 1), mode='circular')", "unsupported", "not supported"),
    # positions computed from the inputs: refused where they turn into integers, before any gather
    ("return x.index_select(1, (x[0, :, 0, 0] > 0).long())", "dtype", "converts to torch.int64"),
    ("return x[:, [0, 2], [1, 3]]", "unsupported", "2 tensors at once is supported where each"),
])
def test_what_we_cannot_mirror_is_refused_with_a_reason(forward, kind, words, tmp_path):
    result = import_problem(problem(forward) + TAIL, ops_dir=tmp_path)
    assert not result.ok and result.failure.kind == kind
    assert words in result.failure.reason and result.failure.node, result.failure.reason


def test_the_window_view_is_numpy_sliding_windows():
    x = np.arange(2 * 11, dtype=np.float64).reshape(2, 11)
    got = opset.evaluate("window", [x], {"dim": 1, "size": 3, "step": 2, "dilation": 2})
    assert got.shape == opset.infer("window", [((2, 11), "f32")], {"dim": 1, "size": 3, "step": 2, "dilation": 2})[0]
    want = np.lib.stride_tricks.sliding_window_view(x, 5, axis=1)[:, ::2, ::2]
    assert np.array_equal(got, want)
    with pytest.raises(opset.OpError):
        opset.infer("window", [((2, 4), "f32")], {"dim": 1, "size": 3, "step": 1, "dilation": 2})


def test_a_transposed_convolution_with_many_phases_stays_a_small_program(tmp_path):
    """One direct convolution per output phase would be 8³ of them here: past MAX_PHASES the
    input is spread instead, and the graph stays the size of one convolution."""
    from kernels.graph import aten_conv
    src = problem("return self.up(x.unsqueeze(2)[..., :3, :3])", "self.up = nn.ConvTranspose3d(6, 2, 2, stride=8)")
    result = imported(src, "wide_stride", tmp_path)
    assert 8 ** 3 > aten_conv.MAX_PHASES
    assert result.summary["graph"]["nodes"] < 100, result.summary["graph"]["ops"]   # one phase alone is ~15


def test_a_window_view_past_the_tensor_limit_is_refused_before_anything_holds_it(tmp_path, monkeypatch):
    """The windows of a convolution or a pooling hold k times their input's elements as a
    view: the IR's per-tensor limit applies to views too, at translation, so neither the
    interpreter nor a generated kernel is ever asked to hold them."""
    from kernels.graph import translate
    monkeypatch.setattr(translate, "MAX_ELEMENTS", 5000)   # the 2·6·7·3·8·3 windows below hold 6048
    result = import_problem(problem("return F.max_pool2d(x, 3, stride=1)") + TAIL, ops_dir=tmp_path)
    assert not result.ok and result.failure.kind == "unsupported"
    assert "5000 elements are supported" in result.failure.reason and result.failure.node
    assert not list(tmp_path.glob("*/meta.json"))


@pytest.mark.parametrize("idx,want", [
    ([0, 0, 1, 1, 2, 2], [(0, 1, 3, 2)]),                                  # nearest, twice the size
    ([2, 1, 0, 1, 2, 3, 4, 3, 2], [(2, -1, 3, 1), (1, 1, 4, 1), (3, -1, 2, 1)]),   # reflect by 2
    ([0, 0, 0, 1, 2, 3, 4, 4], [(0, 0, 1, 3), (1, 1, 4, 1), (4, 0, 1, 1)]),   # replicate
    ([4, 5, 0, 1, 2, 3], [(4, 1, 2, 1), (0, 1, 4, 1)]),                     # roll by 2
])
def test_a_constant_gather_is_runs_of_slices(idx, want):
    from kernels.graph.aten_gather import runs
    got = runs(np.array(idx))
    assert got == want
    rebuilt = [f + s * i for f, s, c, r in got for i in range(c) for _ in range(r)]
    assert rebuilt == idx
