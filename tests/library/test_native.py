"""Approved kernels in the caller's own process: exactly the approved bytes, or nothing."""
import hashlib
import json

import numpy as np
import pytest

from kernels import library, native, workloads
from kernels.library import LibraryError

WL = workloads.get("softmax")


@pytest.fixture
def promoted(tmp_path, monkeypatch):
    """A library holding one approved softmax champion (as the promotion service writes it)."""
    monkeypatch.delenv("INT21_LIBRARY_KEY", raising=False)
    source, params = WL.template("cpu").seeds()[0]

    def promote(approvals=1, required=1, key=None):
        manifest = {"workload": "softmax", "target": "cpu", "version": 1, "source_sha256": library.sha256(source),
                    "params": params, "proposal": {"required_approvals": required},
                    "approvals": [{"reviewer": f"r{i}", "verdict": "approve"} for i in range(approvals)]}
        if key:
            manifest["signature"] = native.signature(manifest, key.encode())
        library.write_version(manifest, source, tmp_path)
        library.set_champion("softmax", "cpu", "2^8x2^10", 1, tmp_path)
        return tmp_path
    return promote


def reference(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_an_approved_kernel_runs_in_process_and_computes_the_same(promoted):
    root = promoted()
    k = native.load("softmax", root=root)
    x = np.random.default_rng(0).standard_normal((37, 1000)).astype(np.float32)
    np.testing.assert_allclose(k(x), reference(x), rtol=1e-5, atol=1e-7)
    out = np.empty_like(x)
    assert k(x, out=out) is out


def test_a_source_changed_after_approval_is_refused(promoted):
    root = promoted()
    path = root / "softmax" / "cpu" / "v0001" / "kernel.c"
    path.write_text(path.read_text() + "\n/* changed */\n")
    with pytest.raises(LibraryError, match="digest"):
        native.load("softmax", root=root)


def test_a_built_object_changed_on_disk_is_never_loaded(promoted):
    root = promoted()
    k = native.load("softmax", root=root)
    good = k.path.read_bytes()
    tampered = bytearray(good)
    tampered[-1] ^= 0xFF
    swap = k.path.with_suffix(".swap")           # a new file: the loaded one stays mapped as it was
    swap.write_bytes(bytes(tampered))
    swap.replace(k.path)
    again = native.load("softmax", root=root)        # built again from the approved source
    assert again.path.read_bytes() != bytes(tampered)
    assert hashlib.sha256(again.path.read_bytes()).hexdigest() == \
        again.path.with_suffix(".sha256").read_text().strip()


def test_a_kernel_short_of_its_approvals_stays_in_the_sandbox(promoted):
    root = promoted(approvals=1, required=2)
    with pytest.raises(LibraryError, match="approval"):
        native.load("softmax", root=root)


def test_a_keyed_library_checks_the_manifests_signature(promoted, monkeypatch):
    root = promoted(key="k1")
    monkeypatch.setenv("INT21_LIBRARY_KEY", "k1")
    assert native.load("softmax", root=root)
    manifest_path = root / "softmax" / "cpu" / "v0001" / "manifest.json"
    m = json.loads(manifest_path.read_text())
    m["params"]["THREADS"] = 8
    manifest_path.write_text(json.dumps(m))
    with pytest.raises(LibraryError, match="signature"):
        native.load("softmax", root=root)


def test_the_kernel_is_a_torch_custom_op(promoted):
    torch = pytest.importorskip("torch")
    op = native.torch_op("softmax", root=promoted())
    x = torch.randn(16, 512)
    np.testing.assert_allclose(op(x).numpy(), torch.softmax(x, dim=1).numpy(), rtol=1e-5, atol=1e-7)
    compiled = torch.compile(lambda t: op(t) * 2.0, fullgraph=True)
    np.testing.assert_allclose(compiled(x).numpy(), 2 * torch.softmax(x, dim=1).numpy(), rtol=1e-5, atol=1e-6)
