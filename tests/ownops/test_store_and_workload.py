"""An import is stored content-addressed and resolves beside the built-in workloads, with
its ABI, shapes, distributions and tolerance; its baselines rebuild the user's model (in a
subprocess here, as in the harness's timing child)."""
import json
import os
import subprocess
import sys

import numpy as np

from kernels import workloads
from kernels.graph import store
from kernels.spec import Shape


def test_an_import_resolves_beside_the_builtins(imported, ops_dir):
    assert imported("gemm_bias_gelu").ok
    assert "gemm_bias_gelu" in workloads.names() and "softmax" in workloads.names()
    wl = workloads.get("gemm_bias_gelu")
    assert [a.kind for a in wl.args] == ["in", "in", "in", "out", "dim", "dim", "dim"]
    assert wl.shape_dims == ("batch_size", "in_features", "out_features")
    assert wl.shapes.typical[0] == Shape.of(batch_size=37, in_features=53, out_features=29)
    assert wl.shapes.awkward[0] != wl.shapes.typical[0]
    assert wl.tolerance.rel_rmse is not None           # a matmul: a relative-RMSE bound
    assert {"model", "large", "tiny"} <= set(wl.distributions)
    path = store.lookup("gemm_bias_gelu")
    assert path.parent == ops_dir and len(path.name) == 24
    src = open(os.path.dirname(__file__) + "/problems/gemm_bias_gelu.py").read()
    assert (path / "problem.py").read_text() == src
    assert (path / "kernel.c").read_text() == wl.template("cpu").source()


def test_inputs_follow_get_inputs_and_the_params_are_the_stored_weights(imported):
    assert imported("var_std_minmax").ok          # torch.rand(n, d) * 4
    wl = workloads.get("var_std_minmax")
    shape = wl.shapes.typical[0]
    x = wl.make_inputs(shape, "model", 0)["x"]
    assert x.dtype == np.float32 and x.min() >= 0 and x.max() <= 4 and x.mean() > 1.5
    again = wl.make_inputs(shape, "model", 0)["x"]
    assert np.array_equal(x, again) and not np.array_equal(x, wl.make_inputs(shape, "model", 1)["x"])
    assert imported("gemm_bias_gelu").ok
    wl = workloads.get("gemm_bias_gelu")
    feeds = wl.make_inputs(wl.shapes.typical[0], "large", 3)
    assert feeds["p_linear_weight"].shape == (29, 53)
    ref = wl.reference(feeds, wl.shapes.typical[0])
    assert ref["out0"].shape == (37, 29) and ref["out0"].dtype == np.float64


def test_a_softmax_problem_gets_masked_inputs(imported):
    assert imported("softmax_rows").ok
    wl = workloads.get("softmax_rows")
    assert "masked" in wl.distributions
    x = wl.make_inputs(wl.shapes.awkward[0], "masked", 0)["x"]
    assert np.isneginf(x).any() and np.isfinite(x[:, 0]).all()


def test_the_torch_baseline_rebuilds_the_model_with_the_stored_weights(imported, ops_dir, tmp_path):
    assert imported("gemm_bias_gelu").ok
    wl = workloads.get("gemm_bias_gelu")
    shape = wl.shapes.typical[0]
    feeds = wl.make_inputs(shape, "model", 5)
    np.savez(tmp_path / "in.npz", **feeds)
    base = next(b for b in wl.baselines["cpu"] if b.name == "torch")
    code = f"""
import json, numpy as np
from kernels.graph import baselines
feeds = dict(np.load({str(tmp_path / 'in.npz')!r}))
out = {{"out0": np.full((37, 29), np.nan, dtype=np.float32)}}
call = baselines.torch_eager(feeds, out, {json.dumps(shape.as_dict())}, **{json.dumps(base.options)})
call()
np.save({str(tmp_path / 'out.npy')!r}, out["out0"])
"""
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.dirname(__file__)))}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=300)
    got = np.load(tmp_path / "out.npy")
    ref = wl.reference(feeds, shape)["out0"]
    assert np.sqrt(np.mean((got - ref) ** 2)) / np.sqrt(np.mean(ref ** 2)) < 1e-5


def test_importing_the_same_problem_again_lands_in_the_same_folder(imported, ops_dir):
    from kernels.graph import service
    first = imported("softmax_rows")
    again = service.import_problem(open(os.path.dirname(__file__) + "/problems/softmax_rows.py").read(),
                                   name="softmax_rows", ops_dir=ops_dir)
    assert again.ok and again.digest == first.digest
    meta = json.loads((store.lookup("softmax_rows") / "meta.json").read_text())
    assert meta["name"] == "softmax_rows"


def test_an_extra_shape_from_an_override_is_captured_too(ops_dir):
    from kernels.graph import service
    src = open(os.path.dirname(__file__) + "/problems/layernorm_affine.py").read()
    r = service.import_problem(src, name="layernorm_wide", overrides={"batch_size": 5}, ops_dir=ops_dir,
                               awkward=False)
    assert r.ok
    wl = workloads.get("layernorm_wide")
    assert [s["batch_size"] for s in wl.shapes.typical] == [19, 5]
    from kernels.harness.evaluator import EvalSettings, Evaluator
    src_c, params = wl.template("cpu").seeds()[0]
    out = Evaluator(EvalSettings(timing=False, seeds=2, shapes=tuple(wl.shapes.typical))).evaluate(
        src_c, params, wl, "cpu")
    assert out.status == "ok", out.reason
