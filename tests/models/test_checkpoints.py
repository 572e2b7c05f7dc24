"""Local safetensors checkpoints: a round trip, the Hugging Face conventions (sharding, tied
embeddings, half-precision storage, derived buffers), and every refusal naming its key."""
import json

import pytest
import torch
from safetensors.torch import load_file, save_file

from kernels.models.checkpoint import (CheckpointError, load_checkpoint, load_weights, read_config,
                                       save_checkpoint)
from kernels.models.decoder import DecoderLM


@pytest.fixture
def ckpt(tmp_path, tiny_lm):
    return save_checkpoint(tiny_lm, tmp_path / "tiny")


def _edit_config(path, **changes):
    file = path / "config.json"
    raw = json.loads(file.read_text())
    for k, v in changes.items():
        if v is None:
            raw.pop(k, None)
        else:
            raw[k] = v
    file.write_text(json.dumps(raw))


def _edit_tensors(path, fn):
    tensors = load_file(str(path / "model.safetensors"))
    fn(tensors)
    save_file(tensors, str(path / "model.safetensors"))


def test_a_saved_checkpoint_loads_back_to_the_same_model(ckpt, tiny, tiny_lm):
    lm = load_checkpoint(ckpt)
    assert lm.cfg == tiny
    x = torch.randn(1, 5, 64)
    with torch.no_grad():
        for got, want in zip(lm.prefill(x), tiny_lm.prefill(x)):
            assert torch.equal(got, want)


def test_the_config_uses_hugging_face_names_and_defaults(ckpt):
    _edit_config(ckpt, num_key_value_heads=None, rope_theta=500000.0, rms_norm_eps=1e-6,
                 max_position_embeddings=131072)
    cfg = read_config(ckpt / "config.json")
    assert (cfg.kv_heads, cfg.rope_theta, cfg.eps, cfg.max_seq) == (4, 500000.0, 1e-6, 8192)
    assert read_config(ckpt, max_seq=64).max_seq == 64


def test_tied_embeddings_supply_the_lm_head(ckpt, tiny):
    _edit_config(ckpt, tie_word_embeddings=True)
    _edit_tensors(ckpt, lambda t: t.pop("lm_head.weight"))
    w = load_weights(ckpt, tiny)
    assert torch.equal(w["lm_head.weight"], w["model.embed_tokens.weight"])


def test_half_precision_tensors_are_widened_and_derived_buffers_skipped(ckpt, tiny):
    def edit(t):
        t["model.norm.weight"] = t["model.norm.weight"].to(torch.bfloat16)
        t["model.layers.0.self_attn.rotary_emb.inv_freq"] = torch.ones(8)
    _edit_tensors(ckpt, edit)
    assert load_weights(ckpt, tiny)["model.norm.weight"].dtype == torch.float32


def test_a_sharded_checkpoint_is_read_through_its_index(ckpt, tiny, tiny_lm):
    tensors = load_file(str(ckpt / "model.safetensors"))
    (ckpt / "model.safetensors").unlink()
    names = sorted(tensors)
    halves = {"model-00001-of-00002.safetensors": names[::2], "model-00002-of-00002.safetensors": names[1::2]}
    for file, keys in halves.items():
        save_file({k: tensors[k] for k in keys}, str(ckpt / file))
    (ckpt / "model.safetensors.index.json").write_text(json.dumps(
        {"weight_map": {k: f for f, keys in halves.items() for k in keys}}))
    lm = load_checkpoint(ckpt)
    assert all(torch.equal(lm.state_dict()[k], v) for k, v in tiny_lm.state_dict().items())


# --------------------------------------------------------------------------- refusals

def test_a_path_that_is_not_here_is_refused_and_nothing_is_downloaded(tmp_path):
    with pytest.raises(CheckpointError, match="nothing is downloaded"):
        load_checkpoint("meta-llama/Llama-3.2-1B")
    with pytest.raises(CheckpointError, match="no config.json"):
        load_checkpoint(tmp_path)


@pytest.mark.parametrize("changes, message", [
    (dict(hidden_size=None), "missing key 'hidden_size'"),
    (dict(num_hidden_layers="2"), "num_hidden_layers must be an integer"),
    (dict(rms_norm_eps="small"), "rms_norm_eps must be a number"),
    (dict(num_key_value_heads=3), "multiple of kv_heads"),
    (dict(hidden_act="gelu"), "hidden_act='gelu'"),
    (dict(attention_bias=True), "attention_bias=true"),
    (dict(mlp_bias=True), "mlp_bias=true"),
    (dict(rope_scaling={"type": "linear", "factor": 2.0}), "rope_scaling"),
    (dict(head_dim=32), "head_dim=32 differs"),
])
def test_a_config_the_family_cannot_be_is_refused_by_key(ckpt, changes, message):
    _edit_config(ckpt, **changes)
    with pytest.raises(CheckpointError, match=message) as err:
        load_checkpoint(ckpt)
    assert "config.json" in str(err.value)


def test_a_config_that_is_not_json_is_refused(ckpt):
    (ckpt / "config.json").write_text("{hidden_size: 64")
    with pytest.raises(CheckpointError, match="not readable JSON"):
        read_config(ckpt)
    (ckpt / "config.json").write_text("[1, 2]")
    with pytest.raises(CheckpointError, match="expected a JSON object"):
        read_config(ckpt)


def test_a_missing_tensor_is_named(ckpt):
    _edit_tensors(ckpt, lambda t: t.pop("model.layers.1.mlp.up_proj.weight"))
    with pytest.raises(CheckpointError, match=r"missing tensor 'model.layers.1.mlp.up_proj.weight' \(shape \(160, 64\)\)"):
        load_checkpoint(ckpt)


def test_an_untied_checkpoint_without_its_lm_head_is_refused(ckpt):
    _edit_tensors(ckpt, lambda t: t.pop("lm_head.weight"))
    with pytest.raises(CheckpointError, match="missing tensor 'lm_head.weight'"):
        load_checkpoint(ckpt)


def test_a_mis_shaped_tensor_is_named_with_both_shapes(ckpt):
    _edit_tensors(ckpt, lambda t: t.update({"model.layers.0.self_attn.k_proj.weight": torch.zeros(64, 64)}))
    with pytest.raises(CheckpointError, match=r"'model.layers.0.self_attn.k_proj.weight' has shape \(64, 64\), "
                                              r"config.json implies \(32, 64\)"):
        load_checkpoint(ckpt)


def test_an_integer_tensor_is_refused(ckpt):
    _edit_tensors(ckpt, lambda t: t.update({"model.norm.weight": torch.ones(64, dtype=torch.int32)}))
    with pytest.raises(CheckpointError, match="'model.norm.weight' is torch.int32"):
        load_checkpoint(ckpt)


def test_an_unexpected_tensor_is_named(ckpt):
    _edit_tensors(ckpt, lambda t: t.update({"model.layers.0.self_attn.q_proj.bias": torch.zeros(64),
                                            "model.layers.2.mlp.up_proj.weight": torch.zeros(160, 64)}))
    with pytest.raises(CheckpointError, match=r"unexpected tensor 'model.layers.0.self_attn.q_proj.bias' \(and 1 more\)"):
        load_checkpoint(ckpt)


def test_missing_or_corrupt_weight_files_are_refused(ckpt):
    (ckpt / "model.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{garbage")
    with pytest.raises(CheckpointError, match="not a readable safetensors file"):
        load_checkpoint(ckpt)
    (ckpt / "model.safetensors").unlink()
    with pytest.raises(CheckpointError, match="no model.safetensors and no model.safetensors.index.json"):
        load_checkpoint(ckpt)


def test_a_broken_shard_index_is_refused(ckpt):
    (ckpt / "model.safetensors.index.json").write_text(json.dumps({"weights": {}}))
    with pytest.raises(CheckpointError, match="no usable weight_map"):
        load_checkpoint(ckpt)
    (ckpt / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"a": "../elsewhere.safetensors"}}))
    with pytest.raises(CheckpointError, match="is not a file in the checkpoint directory"):
        load_checkpoint(ckpt)


def test_a_tensor_in_two_shards_is_refused(ckpt):
    tensors = load_file(str(ckpt / "model.safetensors"))
    save_file({"model.norm.weight": tensors["model.norm.weight"]}, str(ckpt / "extra.safetensors"))
    (ckpt / "model.safetensors.index.json").write_text(json.dumps(
        {"weight_map": {"x": "model.safetensors", "model.norm.weight": "extra.safetensors"}}))
    with pytest.raises(CheckpointError, match="'model.norm.weight' is also in"):
        load_checkpoint(ckpt)


def test_the_seeded_model_differs_from_a_loaded_one_only_by_its_weights(ckpt, tiny):
    _edit_tensors(ckpt, lambda t: t.update({"model.norm.weight": torch.full((64,), 2.0)}))
    lm = load_checkpoint(ckpt)
    assert torch.equal(lm.model.norm.weight, torch.full((64,), 2.0))
    assert not torch.equal(lm.model.norm.weight, DecoderLM(tiny).model.norm.weight)
