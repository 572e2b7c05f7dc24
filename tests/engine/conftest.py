"""Shared engine fixtures: one tiny decoder engine (hidden 64, 4 heads over 2 K/V heads, FFN
128, 2 layers, vocabulary 256, max_seq 9), imported once per session into a private ops
store with the greedy check's lengths (a 1-token prompt, 8 decode steps), judged once."""
import os

import pytest

pytest.importorskip("torch")

from kernels.models.decoder import DecoderConfig  # noqa: E402

TINY = DecoderConfig(hidden=64, heads=4, kv_heads=2, ffn=128, layers=2, vocab=256, max_seq=9)


@pytest.fixture(scope="session")
def engine_ops(tmp_path_factory):
    return tmp_path_factory.mktemp("engine-ops")


@pytest.fixture(autouse=True)
def _ops_env(engine_ops, monkeypatch):
    """Every engine test reads and writes the session's private ops store."""
    monkeypatch.setenv("INT21_OPS_DIR", str(engine_ops))


@pytest.fixture(scope="session")
def tiny_engine(engine_ops):
    from kernels.engine import service
    old = os.environ.get("INT21_OPS_DIR")
    os.environ["INT21_OPS_DIR"] = str(engine_ops)
    try:
        return service.engine_import(service.Model("decoder", TINY), name="tiny", greedy=(1, 8))
    finally:
        if old is None:
            os.environ.pop("INT21_OPS_DIR", None)
        else:
            os.environ["INT21_OPS_DIR"] = old


@pytest.fixture(scope="session")
def tiny_checked(tiny_engine, engine_ops):
    from kernels.engine import service
    old = os.environ.get("INT21_OPS_DIR")
    os.environ["INT21_OPS_DIR"] = str(engine_ops)
    try:
        return service.engine_check("tiny", seeds=2)
    finally:
        if old is None:
            os.environ.pop("INT21_OPS_DIR", None)
        else:
            os.environ["INT21_OPS_DIR"] = old
