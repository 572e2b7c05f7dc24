"""The decoder family: prefill and decode agree with each other, the weights are seeded and
stay O(1) through depth, configs are checked, and each phase exports with static shapes."""
import pytest
import torch

from kernels.models.decoder import (ConfigError, Decode, DecoderConfig, DecoderLM, Prefill,
                                    parameter_shapes)


def test_prefill_of_t_plus_one_tokens_equals_prefill_of_t_then_one_decode_step(tiny_lm):
    x = torch.randn(2, 9, 64, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        logits9, kv9 = tiny_lm.prefill(x)
        logits8, kv8 = tiny_lm.prefill(x[:, :8])
        step, rows = tiny_lm.decode(x[:, 8:9], kv8)
    assert logits9.shape == (2, 9, 128) and kv9.shape == (2, 2, 2, 2, 9, 16)
    assert step.shape == (2, 1, 128) and rows.shape == (2, 2, 2, 2, 1, 16)
    torch.testing.assert_close(step, logits9[:, 8:9], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(rows, kv9[..., 8:9, :], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(logits8, logits9[:, :8], atol=1e-5, rtol=1e-5)   # causal


def test_a_run_of_decode_steps_rebuilds_the_prefill_cache(tiny_lm):
    ids = torch.tensor([[5, 17, 99, 3, 64, 2]])
    with torch.no_grad():
        logits, kv = tiny_lm.prefill_ids(ids)
        _, cache = tiny_lm.prefill_ids(ids[:, :1])
        for t in range(1, ids.shape[1]):
            step, rows = tiny_lm.decode_ids(ids[:, t:t + 1], cache)
            torch.testing.assert_close(step[:, 0], logits[:, t], atol=2e-5, rtol=1e-5)
            cache = torch.cat((cache, rows), dim=4)
    torch.testing.assert_close(cache, kv, atol=2e-5, rtol=1e-5)


def test_the_weights_come_from_the_seed_and_not_from_the_global_rng(tiny):
    torch.manual_seed(1)
    a = DecoderLM(tiny).state_dict()
    torch.manual_seed(2)
    b = DecoderLM(tiny).state_dict()
    other = DecoderLM(DecoderConfig(**{**tiny.to_json(), "seed": 1})).state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not torch.equal(a["lm_head.weight"], other["lm_head.weight"])


def test_activations_stay_of_order_one_through_eight_layers():
    cfg = DecoderConfig(hidden=128, heads=4, kv_heads=1, ffn=320, layers=8, vocab=256)
    lm = DecoderLM(cfg).eval()
    x = lm.embed(torch.randint(0, 256, (1, 32), generator=torch.Generator().manual_seed(0)))
    with torch.no_grad():
        h = x
        for layer in lm.model.layers:
            h, _, _ = layer(h, lm.rope_cos[:32], lm.rope_sin[:32])
        logits, _ = lm.prefill(x)
    assert 0.5 < h.pow(2).mean().sqrt() < 4.0
    assert 1.0 < logits.std() < 4.0


def test_parameter_shapes_are_the_state_dict_without_building_a_model(tiny, tiny_lm):
    assert parameter_shapes(tiny) == {k: tuple(v.shape) for k, v in tiny_lm.state_dict().items()}
    assert "model.layers.1.self_attn.q_proj.weight" in parameter_shapes(tiny)
    assert not any("rope" in k for k in tiny_lm.state_dict())   # derived, not a weight


@pytest.mark.parametrize("kwargs, key", [
    (dict(hidden=60, heads=8), "hidden"), (dict(heads=4, kv_heads=3), "kv_heads"),
    (dict(layers=0), "layers"), (dict(hidden=36, heads=4, kv_heads=4), "head_dim"),
    (dict(eps=0.0), "eps"), (dict(rope_theta=1.0), "rope_theta"), (dict(vocab=True), "vocab"),
])
def test_a_config_that_cannot_be_built_names_its_key(tiny, kwargs, key):
    with pytest.raises(ConfigError, match=key):
        DecoderConfig(**{**tiny.to_json(), **kwargs})


def test_the_cli_spelling_parses_and_refuses_unknown_or_missing_keys():
    cfg = DecoderConfig.from_text("decoder:hidden=1024,heads=16,kv_heads=4,ffn=2816,layers=4,vocab=8192")
    assert (cfg.hidden, cfg.head_dim, cfg.kv_heads, cfg.layers) == (1024, 64, 4, 4)
    assert DecoderConfig.from_text("hidden=64,heads=4,kv_heads=2,ffn=8,layers=1,vocab=9,eps=1e-6").eps == 1e-6
    with pytest.raises(ConfigError, match="unknown key 'width'"):
        DecoderConfig.from_text("hidden=64,heads=4,kv_heads=2,ffn=8,layers=1,vocab=9,width=3")
    with pytest.raises(ConfigError, match="missing key.*vocab"):
        DecoderConfig.from_text("hidden=64,heads=4,kv_heads=2,ffn=8,layers=1")
    with pytest.raises(ConfigError, match="'x' is not a number"):
        DecoderConfig.from_text("hidden=x")


def test_decode_refuses_more_than_one_token_and_positions_past_max_seq(tiny):
    lm = DecoderLM(DecoderConfig(**{**tiny.to_json(), "max_seq": 4})).eval()
    with torch.no_grad():
        _, kv = lm.prefill(torch.randn(1, 4, 64))
        with pytest.raises(ValueError, match="position 4 is past max_seq=4"):
            lm.decode(torch.randn(1, 1, 64), kv)
        with pytest.raises(ValueError, match="one token"):
            lm.decode(torch.randn(1, 2, 64), kv[..., :2, :])
        with pytest.raises(ValueError, match="longer than max_seq"):
            lm.prefill(torch.randn(1, 5, 64))


def test_each_phase_exports_to_core_aten_with_static_shapes_and_attention_kept_whole(tiny_lm):
    x, kv = torch.randn(1, 1, 64), torch.randn(2, 2, 1, 2, 5, 16)
    table = torch.export.default_decompositions()
    table.pop(torch.ops.aten.scaled_dot_product_attention.default, None)
    for module, args in ((Prefill(tiny_lm), (torch.randn(1, 6, 64),)), (Decode(tiny_lm), (x, kv))):
        ep = torch.export.export(module, args).run_decompositions(table)
        targets = {str(n.target) for n in ep.graph.nodes if n.op == "call_function"}
        assert "aten.scaled_dot_product_attention.default" in targets
        assert not any("embedding" in t or "index" in t for t in targets)   # hidden states in
        with torch.no_grad():
            for got, want in zip(ep.module()(*args), module(*args)):
                torch.testing.assert_close(got, want)
