"""An approved engine in the caller's own process (kernels.library.load_engine): the phases
compute the model, chain through the cache, drop into torch as custom ops, and a library
folder that no longer matches what the reviewers approved is refused before anything runs."""
import json

import numpy as np
import pytest
import torch

from kernels import library, native
from kernels.engine.native import ENGINE_SIGNED_FIELDS
from kernels.library import LibraryError
from kernels.models.decoder import DecoderLM
from tests.engine.conftest import MINI


@pytest.fixture
def approved(mini_release, tmp_path, monkeypatch):
    """Writes the mini engine as v1 of an approved library version; ``key`` signs it."""
    monkeypatch.delenv("INT21_LIBRARY_KEY", raising=False)

    def write(approvals=1, required=1, key=None):
        m = {**mini_release.manifest, "version": 1, "proposal": {"required_approvals": required},
             "approvals": [{"reviewer": f"r{i}", "verdict": "approve"} for i in range(approvals)]}
        if key:
            m["signature"] = native.signature(m, key.encode(), ENGINE_SIGNED_FIELDS)
        library.write_engine_version(m, mini_release.sources, mini_release.weights, tmp_path)
        return tmp_path
    return write


@pytest.fixture(scope="module")
def lm():
    return DecoderLM(MINI).eval()


def test_an_approved_engine_prefills_and_decodes_in_process_as_the_model_does(approved, lm):
    eng = library.load_engine("mini", root=approved())
    ids = np.array([[3, 17, 200]])
    logits, kv = eng.prefill(ids)
    with torch.inference_mode():
        want_logits, want_kv = lm.prefill(lm.embed(torch.from_numpy(ids)))
        np.testing.assert_allclose(logits, want_logits.numpy(), atol=1e-4, rtol=1e-4)
        np.testing.assert_allclose(kv, want_kv.numpy(), atol=1e-4, rtol=1e-4)
        step, rows = eng.decode(np.array([5]), kv)              # one token after the 3 cached
        want_step, want_rows = lm.decode(lm.embed(torch.tensor([[5]])), torch.from_numpy(kv))
    np.testing.assert_allclose(step, want_step.numpy(), atol=1e-4, rtol=1e-4)
    np.testing.assert_allclose(rows, want_rows.numpy(), atol=1e-4, rtol=1e-4)
    out = (np.empty_like(step), np.empty_like(rows))
    assert eng.decode(np.array([5]), kv, out=out) is not None and np.array_equal(out[0], step)
    with pytest.raises(ValueError, match="approved at these shapes only"):
        eng.prefill(np.zeros((1, 2), dtype=np.int64))           # seq 2 was never imported or judged


def test_every_call_holds_its_library_files_lock(approved, lm, monkeypatch):
    """The program's arena and its team's barrier are static: callers on several threads take
    turns, through the ctypes call and the torch op alike, and two loads of one file share it."""
    root = approved()
    eng = library.load_engine("mini", root=root)
    ph = eng._phase("prefill")
    held, real_plan = [], ph.plan

    def plan(*arrays):
        call, outs = real_plan(*arrays)
        return (lambda *ptrs: (held.append(ph._lock.locked()), call(*ptrs))[1]), outs
    monkeypatch.setattr(ph, "plan", plan)
    eng.prefill(np.array([[3, 17, 200]]))
    eng.torch_op("prefill")(lm.embed(torch.tensor([[1, 2, 3, 4]])).detach())
    assert held == [True, True] and not ph._lock.locked()
    assert library.load_engine("mini", root=root)._phase("prefill")._lock is ph._lock


def test_each_phase_is_a_torch_custom_op(approved, lm):
    eng = library.load_engine("mini", root=approved())
    op = eng.torch_op("prefill")
    x = lm.embed(torch.tensor([[1, 2, 3, 4]])).detach()
    logits, kv = op(x)
    with torch.inference_mode():
        want, _ = lm.prefill(x)
    np.testing.assert_allclose(logits.numpy(), want.numpy(), atol=1e-4, rtol=1e-4)
    # traced whole by dynamo through the op's fake implementation (the eager backend: inductor's
    # own compile adds ~40 s here and tests nothing of ours)
    compiled = torch.compile(lambda t: op(t)[0] * 2.0, fullgraph=True, backend="eager")
    np.testing.assert_allclose(compiled(x).numpy(), 2 * want.numpy(), atol=2e-4, rtol=1e-4)


@pytest.mark.parametrize("tamper, message", [
    ("source", "decode source does not match the digest"),
    ("weights", "weights file does not match the digest"),
    ("manifest", "prefill source does not match the digest"),
])
def test_a_library_file_changed_after_approval_is_refused(approved, tamper, message):
    root = approved()
    folder = root / "_engines" / "mini" / "v0001"
    if tamper == "source":
        (folder / "decode.c").write_text((folder / "decode.c").read_text() + "\n/* changed */\n")
    elif tamper == "weights":
        data = bytearray((folder / "weights.bin").read_bytes())
        data[100] ^= 0x01
        (folder / "weights.bin").write_bytes(bytes(data))
    else:
        m = json.loads((folder / "manifest.json").read_text())
        m["phases"]["prefill"]["source_sha256"] = "0" * 64
        (folder / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(LibraryError, match=message):
        library.load_engine("mini", root=root)


def test_a_keyed_library_checks_the_engines_signature(approved, monkeypatch):
    root = approved(key="k1")
    monkeypatch.setenv("INT21_LIBRARY_KEY", "k1")
    assert library.load_engine("mini", root=root).version == 1
    path = root / "_engines" / "mini" / "v0001" / "manifest.json"
    m = json.loads(path.read_text())
    m["phases"]["decode"]["params"]["G0_THREADS"] = 2      # digests intact, the approved params not
    path.write_text(json.dumps(m))
    with pytest.raises(LibraryError, match="signature does not verify"):
        library.load_engine("mini", root=root)


def test_an_engine_short_of_its_approvals_or_absent_is_not_loaded(approved, tmp_path):
    with pytest.raises(LibraryError, match="1 approval\\(s\\) of the 2 required"):
        library.load_engine("mini", root=approved(approvals=1, required=2))
    with pytest.raises(LibraryError, match="no promoted engine 'other'"):
        library.load_engine("other", root=tmp_path)


def test_a_decode_step_runs_natively_at_a_length_only_its_shared_unit_serves(tiny_engine, tmp_path, monkeypatch):
    """The tiny engine's decode was captured after 1, 2, 3, 7 and 8 positions; 3..8 share one
    unit. In process, a step after 5 (never captured) runs through that unit, as the model."""
    from kernels import workloads
    from kernels.engine import release
    from tests.engine.conftest import TINY
    monkeypatch.delenv("INT21_LIBRARY_KEY", raising=False)
    chosen = {p: workloads.get(i["workload"]).template("cpu").seeds()[0] for p, i in tiny_engine["phases"].items()}
    rel = release.release("tiny", chosen)
    assert [(r["dim"], r["lo"], r["hi"]) for r in rel.manifest["phases"]["decode"]["ranges"]] == [("PAST", 3, 8)]
    m = {**rel.manifest, "version": 1, "proposal": {"required_approvals": 1},
         "approvals": [{"reviewer": "r0", "verdict": "approve"}]}
    library.write_engine_version(m, rel.sources, rel.weights, tmp_path)
    eng = library.load_engine("tiny", root=tmp_path)
    assert eng.phases["decode"].ranges() == [{"dim": "PAST", "lo": 3, "hi": 8}]
    lm = DecoderLM(TINY).eval()
    kv = np.random.default_rng(0).standard_normal((TINY.layers, 2, 1, TINY.kv_heads, 5, TINY.head_dim)).astype(np.float32)
    step, rows = eng.decode(np.array([7]), kv)
    with torch.inference_mode():
        want_step, want_rows = lm.decode(lm.embed(torch.tensor([[7]])), torch.from_numpy(kv))
    np.testing.assert_allclose(step, want_step.numpy(), atol=1e-4, rtol=1e-4)
    np.testing.assert_allclose(rows, want_rows.numpy(), atol=1e-4, rtol=1e-4)
    with pytest.raises(ValueError, match=r"every PAST in 3\.\.8"):
        eng.decode(np.array([7]), kv[:, :, :, :, :0])        # an empty cache: below every shape and range
