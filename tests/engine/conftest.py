"""Shared engine fixtures: one tiny decoder engine (hidden 64, 4 heads over 2 K/V heads, FFN
128, 2 layers, vocabulary 256, max_seq 9), imported once per session into a private ops
store with the greedy check's lengths (a 1-token prompt, 8 decode steps), judged once."""
import contextlib
import os

import pytest

pytest.importorskip("torch")

from kernels.models.decoder import DecoderConfig  # noqa: E402

TINY = DecoderConfig(hidden=64, heads=4, kv_heads=2, ffn=128, layers=2, vocab=256, max_seq=9)


@contextlib.contextmanager
def ops_store(path):
    """INT21_OPS_DIR set to ``path`` for a session fixture's work (monkeypatch is per test)."""
    old = os.environ.get("INT21_OPS_DIR")
    os.environ["INT21_OPS_DIR"] = str(path)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("INT21_OPS_DIR", None)
        else:
            os.environ["INT21_OPS_DIR"] = old


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
    with ops_store(engine_ops):
        return service.engine_import(service.Model("decoder", TINY), name="tiny", greedy=(1, 8))


@pytest.fixture(scope="session")
def tiny_checked(tiny_engine, engine_ops):
    from kernels.engine import service
    with ops_store(engine_ops):
        return service.engine_check("tiny", seeds=2)


# A smaller engine for the library's tests (one layer, max_seq 4, no greedy lengths): three
# shapes per phase, so its sources build in seconds (the tiny engine's decode, specialised
# to nine cache lengths, takes ~20 s for gcc on this host).
MINI = DecoderConfig(hidden=64, heads=4, kv_heads=2, ffn=128, layers=1, vocab=256, max_seq=4)


@pytest.fixture(scope="session")
def mini_engine(engine_ops):
    from kernels.engine import service
    with ops_store(engine_ops):
        return service.engine_import(service.Model("decoder", MINI), name="mini")


@pytest.fixture(scope="session")
def mini_release(mini_engine, engine_ops):
    """The mini engine's phases at their default points, as a release (manifest core, sources,
    packed weights) ready for an approved version."""
    from kernels import workloads
    from kernels.engine import release
    with ops_store(engine_ops):
        chosen = {p: workloads.get(i["workload"]).template("cpu").seeds()[0] for p, i in mini_engine["phases"].items()}
        return release.release("mini", chosen)
