"""Shared personas for the model tests: ``tiny`` is the family at test size (hidden 64,
2 layers, vocab 128) with grouped-query heads (4 query heads share 2 K/V heads)."""
import pytest

torch = pytest.importorskip("torch")

from kernels.models.decoder import DecoderConfig, DecoderLM  # noqa: E402

TINY = DecoderConfig(hidden=64, heads=4, kv_heads=2, ffn=160, layers=2, vocab=128)


@pytest.fixture(scope="session")
def tiny():
    return TINY


@pytest.fixture(scope="session")
def tiny_lm():
    return DecoderLM(TINY).eval()
