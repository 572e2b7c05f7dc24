"""The harness's streaming stores (fill.c): the poison fill and the copy, exact to the byte,
and a fallback to numpy that is reported, never a failure."""
import ctypes

import numpy as np
import pytest

from kernels.harness import fill
from kernels.harness.arena import POISON_WORD, Arena
from kernels.harness.phases import _poison


@pytest.fixture(scope="module")
def streams():
    s = fill.streams()
    assert s is not None, "the streaming fill did not build with the system C compiler"
    return s


@pytest.mark.parametrize("offset,n", [(0, 0), (0, 1), (1, 3), (3, 17), (1, 4096 * 3 + 5), (0, 1 << 20)])
def test_the_streaming_fill_writes_every_word_of_the_range_and_nothing_outside_it(streams, offset, n):
    buf = np.zeros(n + offset + 8, dtype=np.uint32)
    streams.fill(buf[offset:offset + n], 0x7FC12345)
    assert (buf[offset:offset + n] == 0x7FC12345).all()
    assert (buf[:offset] == 0).all() and (buf[offset + n:] == 0).all()


def test_a_guarded_output_poisoned_by_streaming_stores_holds_the_fresh_nan_and_intact_guards(streams):
    with Arena("outputs", {"y": (7, 33)}) as arena:
        _poison(arena.array("y"), np.random.default_rng(1), streams)
        words = arena.raw("y")
        assert np.isnan(arena.array("y")).all() and (words == words[0]).all() and words[0] != POISON_WORD
        assert arena.guards_intact("y")


def test_a_fill_library_that_will_not_load_falls_back_to_numpy(tmp_path, monkeypatch):
    monkeypatch.setattr(fill, "library", lambda cc=None: str(tmp_path / "missing.so"))
    fill._STREAMS.clear()
    try:
        assert fill.streams() is None
    finally:
        fill._STREAMS.clear()


def test_the_fill_library_is_built_once_and_reused(streams):
    assert fill.library() == fill.library()
    assert ctypes.CDLL(fill.library()).i21_fill_nt


@pytest.mark.parametrize("offset,n", [(0, 0), (1, 1), (3, 15), (0, 64), (5, 1000), (7, (1 << 20) + 13)])
def test_the_streaming_copy_copies_every_byte_from_any_alignment_and_nothing_more(streams, offset, n):
    rng = np.random.default_rng(n)
    src = rng.integers(0, 256, n + 16, dtype=np.uint8)
    dst = np.zeros(n + offset + 16, dtype=np.uint8)
    streams.copy(dst[offset:offset + n], src[3:3 + n])
    assert (dst[offset:offset + n] == src[3:3 + n]).all()
    assert not dst[:offset].any() and not dst[offset + n:].any()
