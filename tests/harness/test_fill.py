"""The timing child's streaming stores (fill.c): the poison fill and the copy, exact to the
byte, and a fallback to numpy that is reported, never a failure."""
import ctypes

import numpy as np
import pytest

from kernels.harness import child, fill


@pytest.fixture(scope="module")
def streams():
    path = fill.library()
    assert path, "the streaming fill did not build with the system C compiler"
    return child._streams({"fill_lib": path}, [])


@pytest.fixture(scope="module")
def nt_fill(streams):
    return streams.fill


@pytest.mark.parametrize("offset,n", [(0, 0), (0, 1), (1, 3), (3, 17), (1, 4096 * 3 + 5), (0, 1 << 20)])
def test_the_streaming_fill_writes_every_word_of_the_range_and_nothing_outside_it(nt_fill, offset, n):
    buf = np.zeros(n + offset + 8, dtype=np.uint32)
    nt_fill(buf[offset:].ctypes.data, n, 0x7FC12345)
    assert (buf[offset:offset + n] == 0x7FC12345).all()
    assert (buf[:offset] == 0).all() and (buf[offset + n:] == 0).all()


def test_a_guarded_output_poisoned_by_streaming_stores_holds_the_fresh_nan_and_intact_guards(nt_fill):
    g = child.Guarded((7, 33))
    g.poison(np.random.default_rng(1), nt_fill)
    words = g.body
    assert np.isnan(g.array).all() and (words == words[0]).all() and words[0] != child.POISON_WORD
    assert g.guards_intact()


def test_a_fill_library_that_will_not_load_falls_back_to_numpy_with_a_note(tmp_path):
    notes = []
    assert child._streams({"fill_lib": str(tmp_path / "missing.so")}, notes) is None
    assert notes and "poison fill through the cache" in notes[0]
    assert child._streams({}, []) is None


def test_the_fill_library_is_built_once_and_reused(nt_fill):
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
