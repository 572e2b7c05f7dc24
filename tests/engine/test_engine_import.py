"""An engine end to end on a tiny decoder: both phases imported through the own-ops path,
one generated program each with one entry point and a planned arena, judged correct by the
harness at every shape (1, a prime, the maximum, and the greedy check's lengths), and the
greedy-decode check through the sandboxed call path agreeing with the torch model."""
import re

import pytest

from kernels import workloads
from kernels.engine import service, store
from kernels.graph import store as ops_store
from kernels.models.decoder import DecoderConfig

# the session engine's model (tests/engine/conftest.py builds the same)
TINY = DecoderConfig(hidden=64, heads=4, kv_heads=2, ffn=128, layers=2, vocab=256, max_seq=9)


def test_both_phases_are_imported_at_the_awkward_lengths(tiny_engine):
    rec = store.load("tiny")
    assert rec["phases"] == tiny_engine["phases"] and rec["model"]["config"] == TINY.to_json()
    pre, dec = rec["phases"]["prefill"], rec["phases"]["decode"]
    assert pre["workload"] == "tiny_prefill" and dec["workload"] == "tiny_decode"
    seqs = {(s["role"], s["dims"]["SEQ"]) for s in pre["shapes"]}
    assert seqs == {("typical", 9), ("awkward", 1), ("awkward", 7)}        # the max, 1, a prime
    pasts = sorted(s["dims"]["PAST"] for s in dec["shapes"])
    # the greedy check's 8 steps after a 1-token prompt (8 = max_seq - 1): the first three and
    # the last captured, the rest served by the unit the longer ones share
    assert pasts == [1, 2, 3, 7, 8]
    assert pre["ranges"] == [] and dec["ranges"] == [{"dim": "PAST", "lo": 3, "hi": 8}]
    assert {s["dims"]["PAST"] for s in dec["shapes"] if s["role"] == "awkward"} == {1, 7}
    for phase in (pre, dec):
        assert phase["families"]["matmul"] >= 7 * TINY.layers      # q k v o gate up down per layer
        assert phase["families"]["attention"] == TINY.layers
        assert phase["knobs"] > 0


def test_each_phase_is_one_source_with_one_entry_and_an_arena_planned_by_liveness(tiny_engine):
    for phase in ("prefill", "decode"):
        info = tiny_engine["phases"][phase]
        path = ops_store.lookup(info["workload"])
        src = (path / "kernel.c").read_text()
        assert len(re.findall(r"^void kernel\(", src, re.M)) == 1
        meta = ops_store.read_meta(path)
        shared = meta["arena"]["shared"]
        units = len(info["shapes"]) - sum(len(r["members"]) for r in shared) + len(shared)
        assert len(re.findall(r"^static void sd?\d+_run\(", src, re.M)) == units     # one driver per shape or range
        arena = info["arena"]
        assert 0 < arena["bytes"] < arena["bytes_no_reuse"]
        assert arena["bytes"] * 2 <= arena["bytes_no_reuse"]      # reuse across layers pays at least 2x here
        for unit in meta["arena"]["shapes"]:
            live = unit["buffers"]
            for i, a in enumerate(live):
                for b in live[i + 1:]:
                    if not (a["last"] < b["first"] or b["last"] < a["first"]):
                        assert a["offset"] + a["size"] <= b["offset"] or b["offset"] + b["size"] <= a["offset"]
            assert max(b["offset"] + b["size"] for b in live) * 4 == unit["bytes"]
        # the weights are the entry's buffers: every parameter of the model is an input
        args = [a.name for a in workloads.get(info["workload"]).args if a.kind == "in"]
        assert sum(a.startswith("p_phase_lm_model_layers_") for a in args) == 9 * TINY.layers


def test_the_harness_judges_both_phases_correct_at_every_shape(tiny_checked):
    for phase, lengths in (("prefill", {1, 7, 9}), ("decode", {1, 2, 3, 7, 8})):
        got = tiny_checked[phase]
        assert got["status"] == "ok", got["reason"]
        assert got["seeds"] == 2
        assert {int(s.split("x")[-1]) for s in got["shapes"]} == lengths
    assert store.load("tiny")["validation"] == tiny_checked


def test_greedy_decode_with_the_engine_agrees_with_the_torch_model(tiny_checked):
    got = service.engine_greedy("tiny")
    assert got["failure"] is None
    assert got["decode_steps"] == 8 and len(got["steps"]) == 8 and got["prompt_length"] == 1
    assert got["decisions"] == 8 and got["agreed"] == 8 and got["passed"]   # pasts 4, 5, 6: the shared unit
    assert all(s["max_abs_error"] < 1e-3 for s in got["steps"])
    assert got["max_logit_error"] < 1e-3
    assert store.load("tiny")["greedy"]["passed"]


def test_an_engine_phase_has_the_peers_as_baselines_not_timed_by_default(tiny_engine):
    wl = workloads.get("tiny_decode")
    by = {b.name: b for b in wl.baselines["cpu"]}
    assert by["torch"].default and not by["torch_compile"].default
    assert not by["onnxruntime"].default and not by["openvino"].default
    assert by["onnxruntime"].options["phase"] == "decode"
    assert wl.max_source_bytes and wl.max_source_bytes > 256 * 1024


def test_shapes_one_and_a_prime_below_the_longest():
    assert service.prime_below(9) == 7 and service.prime_below(128) == 127 and service.prime_below(2) is None
    assert service.phase_shapes(TINY, "prefill") == ([9], [1, 7])
    assert service.phase_shapes(TINY, "decode", [8, 4]) == ([8, 4], [1, 7])
    assert service.phase_shapes(TINY, "decode", [8], (3, 2)) == ([8, 3, 4], [1, 7])   # the greedy steps: pasts 3, 4
    with pytest.raises(service.EngineError, match="past"):
        service.phase_shapes(TINY, "decode", [9])      # the new row would be position 9 of a 9-long table


def test_a_model_is_named_exactly_once():
    with pytest.raises(service.EngineError, match="exactly one"):
        service.model_from("hidden=64", module="x.py")
    with pytest.raises(service.EngineError, match="unknown key"):
        service.model_from("hidden=64,heads=4,kv_heads=2,ffn=128,layers=2,vocab=256,colour=3")
    with pytest.raises(ValueError, match="cannot name an engine"):
        store.path_of("Bad-Name")


def test_the_torch_baseline_rebuilds_the_decoder_from_its_problem_file(tiny_engine, tmp_path):
    """The problem file holds a dataclass (DecoderConfig): it must be compiled without the
    baseline module's own ``from __future__ import annotations`` (which broke it once)."""
    import json
    import os
    import subprocess
    import sys

    import numpy as np
    wl = workloads.get("tiny_decode")
    shape = wl.shapes.typical[0]
    feeds = wl.make_inputs(shape, "model", 3)
    np.savez(tmp_path / "in.npz", **feeds)
    base = next(b for b in wl.baselines["cpu"] if b.name == "torch")
    outs = wl.out_shapes(shape)
    code = f"""
import numpy as np
from kernels.graph import baselines
feeds = dict(np.load({str(tmp_path / 'in.npz')!r}))
out = {{k: np.full(s, np.nan, dtype=np.float32) for k, s in {json.dumps({k: list(v) for k, v in outs.items()})}.items()}}
baselines.torch_eager(feeds, out, {json.dumps(shape.as_dict())}, **{json.dumps(base.options)})()
np.savez({str(tmp_path / 'out.npz')!r}, **out)
"""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "PYTHONPATH": root}, timeout=300)
    got = np.load(tmp_path / "out.npz")
    ref = wl.reference(feeds, shape)
    for k in ref:
        assert np.abs(got[k] - ref[k]).max() < 1e-4 * max(1.0, np.abs(ref[k]).max())


def test_a_checkpoint_becomes_an_engine_with_its_own_weights(tmp_path):
    """The family's problem file is imported, then the stored weights are the checkpoint's
    (checked against its torch model in float64 at every shape inside the import)."""
    import numpy as np

    from kernels.models.checkpoint import save_checkpoint
    from kernels.models.decoder import DecoderConfig, DecoderLM
    cfg = DecoderConfig(hidden=32, heads=2, kv_heads=1, ffn=64, layers=1, vocab=64, max_seq=4, seed=7)
    lm = DecoderLM(cfg).eval()      # the checkpoint's weights: seed 7; its config.json has no seed (0)
    save_checkpoint(lm, tmp_path / "ckpt", max_position_embeddings=4)
    model = service.model_from(checkpoint=str(tmp_path / "ckpt"))
    assert model.kind == "checkpoint" and model.config.hidden == 32
    rec = service.engine_import(model, name="ckpt")
    assert rec["model"]["checkpoint"] == str((tmp_path / "ckpt").resolve())
    path = ops_store.lookup(rec["phases"]["decode"]["workload"])
    want = lm.state_dict()["model.layers.0.mlp.up_proj.weight"].numpy()
    seeded = DecoderLM(DecoderConfig(**{**cfg.to_json(), "seed": 0})).state_dict()["model.layers.0.mlp.up_proj.weight"]
    for k in range(len(rec["phases"]["decode"]["shapes"])):
        _, params = ops_store.read_shape(path, k)
        assert np.array_equal(params["p_phase_lm_model_layers_0_mlp_up_proj_weight"], want)
        assert not np.array_equal(params["p_phase_lm_model_layers_0_mlp_up_proj_weight"], seeded.numpy())
    assert "sha256" in (path / "problem.py").read_text()     # its own store folder, never the seeded model's


def test_a_gpt2_style_block_written_elsewhere_imports_and_is_correct(engine_ops):
    """LayerNorm + GELU MLP + biased multi-head attention (tests/engine/models/gpt2_block.py):
    captured from its own PyTorch definition, one program, correct at both of its shapes."""
    from pathlib import Path
    path = Path(__file__).parent / "models" / "gpt2_block.py"
    rec = service.engine_import(service.model_from(module=str(path)), name="gpt2")
    phase = rec["phases"]["forward"]
    assert phase["families"]["matmul"] >= 4 * 2 and phase["families"]["reduction"] >= 2 * 2 + 1   # per block
    report = service.engine_check("gpt2", seeds=1)
    assert report["forward"]["status"] == "ok", report["forward"]["reason"]


def test_greedy_steps_are_all_captured_where_no_unit_is_shared(tmp_path, monkeypatch):
    """Where the decode units do not share one (here: sharing switched off), the lengths between
    the captured ones would have no unit: the import captures every greedy step instead."""
    from kernels.codegen import dynamic
    monkeypatch.setattr(dynamic, "find", lambda *a, **k: [])
    mini = DecoderConfig(hidden=64, heads=4, kv_heads=2, ffn=128, layers=1, vocab=64, max_seq=9)
    rec = service.engine_import(service.Model("decoder", mini), name="nosharing", greedy=(2, 6), ops_dir=tmp_path)
    dec = rec["phases"]["decode"]
    assert dec["ranges"] == []
    assert {s["dims"]["PAST"] for s in dec["shapes"]} >= set(range(2, 8))
