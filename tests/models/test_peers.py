"""The peers: each gives the eager model's logits and cache on the same weights and inputs,
reads its inputs at every call, writes the preallocated outputs, and the ONNX export is
made once per content. A peer whose runtime does not import here is skipped with a note."""
import importlib

import numpy as np
import pytest
import torch

from kernels.models import peers
from kernels.models.decoder import DecoderLM

ATOL = RTOL = 1e-4   # the harness's float32 tolerance


def _available(module):
    try:
        importlib.import_module(module)
        return True
    except ImportError:
        return False


PEER_PARAMS = [pytest.param(name, marks=pytest.mark.skipif(not _available(req), reason=f"{req} does not import here"))
               for name, (_, req, _) in peers.PEERS.items()]


def _case(phase, lm):
    g = np.random.default_rng(11)
    if phase == "prefill":
        inputs = {"x": g.standard_normal((1, 7, 64), dtype=np.float32)}
        shapes = {"logits": (1, 7, 128), "kv": (2, 2, 1, 2, 7, 16)}
    else:
        with torch.no_grad():
            _, kv = lm.prefill(torch.from_numpy(g.standard_normal((1, 5, 64), dtype=np.float32)))
        inputs = {"x": g.standard_normal((1, 1, 64), dtype=np.float32), "kv": kv.numpy().copy()}
        shapes = {"logits": (1, 1, 128), "kv_new": (2, 2, 1, 2, 1, 16)}
    for a in inputs.values():
        a.setflags(write=False)   # as the harness maps them
    return inputs, {k: np.full(s, np.nan, np.float32) for k, s in shapes.items()}


def _eager(lm, phase, inputs):
    with torch.no_grad():
        x = torch.from_numpy(inputs["x"].copy())
        out = lm.prefill(x) if phase == "prefill" else lm.decode(x, torch.from_numpy(inputs["kv"].copy()))
    return [t.numpy() for t in out]


def _factory(name):
    return getattr(peers, peers.PEERS[name][0].partition(":")[2])


@pytest.mark.parametrize("phase", ["prefill", "decode"])
@pytest.mark.parametrize("name", PEER_PARAMS)
def test_each_peer_gives_the_eager_models_outputs(tiny, tiny_lm, name, phase):
    inputs, outputs = _case(phase, tiny_lm)
    call = _factory(name)(inputs, outputs, {}, phase=phase, config=tiny.to_json(), threads=2)
    call()
    for got, want in zip(outputs.values(), _eager(tiny_lm, phase, inputs)):
        np.testing.assert_allclose(got, want, atol=ATOL, rtol=RTOL)


@pytest.mark.parametrize("name", [p for p in PEER_PARAMS if p.values[0] != "torch_compile"])
def test_each_peer_reads_its_inputs_at_every_call(tiny, tiny_lm, name):
    x = np.zeros((1, 3, 64), np.float32)
    outputs = {"out0": np.zeros((1, 3, 128), np.float32), "out1": np.zeros((2, 2, 1, 2, 3, 16), np.float32)}
    call = _factory(name)({"x": x}, outputs, {}, phase="prefill", config=tiny.to_json())
    call()
    x[...] = np.random.default_rng(5).standard_normal(x.shape)   # same buffer, new data
    call()
    np.testing.assert_allclose(outputs["out0"], _eager(tiny_lm, "prefill", {"x": x})[0], atol=ATOL, rtol=RTOL)


@pytest.mark.skipif(not _available("openvino"), reason="openvino does not import here")
def test_a_peer_that_computes_something_else_is_refused_not_timed(tiny, tiny_lm):
    """OpenVINO 2026.4.1 miscomputes the grouped-query prefill when seq == heads (4 here;
    ONNX Runtime on the same file is right). If this starts passing, upstream fixed it."""
    x = np.random.default_rng(5).standard_normal((1, 4, 64), dtype=np.float32)
    outputs = {"logits": np.zeros((1, 4, 128), np.float32), "kv": np.zeros((2, 2, 1, 2, 4, 16), np.float32)}
    with pytest.raises(peers.PeerMismatch, match=r"openvino computes a different logits .* not timed"):
        peers.openvino_peer({"x": x}, outputs, {}, phase="prefill", config=tiny.to_json())


def test_weights_given_as_inputs_under_the_own_ops_names_replace_the_seeded_ones(tiny):
    other = DecoderLM(type(tiny)(**{**tiny.to_json(), "seed": 3})).eval()
    inputs, outputs = _case("prefill", other)
    inputs |= {"p_phase_lm_" + k.replace(".", "_"): v.numpy() for k, v in other.state_dict().items()}
    peers.torch_eager(inputs, outputs, {}, phase="prefill", config=tiny.to_json())()
    np.testing.assert_allclose(outputs["logits"], _eager(other, "prefill", inputs)[0], atol=1e-6)


def test_a_checkpoint_is_a_peers_model_too(tmp_path, tiny_lm):
    from kernels.models.checkpoint import save_checkpoint
    path = save_checkpoint(tiny_lm, tmp_path / "ck")
    inputs, outputs = _case("prefill", tiny_lm)
    peers.torch_eager(inputs, outputs, {}, phase="prefill", checkpoint=str(path))()
    np.testing.assert_allclose(outputs["logits"], _eager(tiny_lm, "prefill", inputs)[0], atol=1e-6)


@pytest.mark.skipif(not _available("onnxscript"), reason="onnxscript does not import here")
def test_the_onnx_export_is_made_once_per_content(tmp_path, tiny, tiny_lm):
    first = peers.export_onnx(tiny_lm, "prefill", [(1, 3, 64)], cache=tmp_path)
    stamp = first.stat().st_mtime_ns
    assert peers.export_onnx(DecoderLM(tiny).eval(), "prefill", [(1, 3, 64)], cache=tmp_path) == first
    assert first.stat().st_mtime_ns == stamp
    assert peers.export_onnx(tiny_lm, "prefill", [(1, 4, 64)], cache=tmp_path) != first
    changed = DecoderLM(tiny).eval()
    with torch.no_grad():
        changed.model.norm.weight[0] += 1.0
    assert peers.export_onnx(changed, "prefill", [(1, 3, 64)], cache=tmp_path) != first
    assert not list((tmp_path / "models" / "onnx").glob(".export-*"))   # no half-written folders


def test_the_peers_are_baselines_with_their_requirements(tiny):
    found = {b.name: b for b in peers.baselines("decode", config=tiny)}
    assert list(found) == list(peers.PEERS)
    assert found["onnxruntime"].requires == "onnxruntime" and found["openvino"].requires == "openvino"
    assert not found["torch_compile"].default and all(b.strong and not b.user_code for b in found.values())
    assert found["torch_eager"].options == {"phase": "decode", "config": tiny.to_json()}
    with pytest.raises(ValueError, match="phase must be one of"):
        peers.baselines("train", config=tiny)


def test_wrong_buffers_are_refused_with_their_names(tiny):
    with pytest.raises(ValueError, match="decode needs input.*kv"):
        peers.torch_eager({"x": np.zeros((1, 1, 64), np.float32)}, {}, {}, phase="decode", config=tiny.to_json())
    with pytest.raises(ValueError, match="writes logits, kv"):
        peers.torch_eager({"x": np.zeros((1, 1, 64), np.float32)}, {"y": None}, {}, phase="prefill",
                          config=tiny.to_json())
