"""The capture child's seccomp profile adds to the candidate filter without changing it."""
import hashlib

import pytest

from kernels.harness import seccomp

# sha256 of program(1234) before profiles existed (commit d49546c): the candidate filter, byte for byte
KERNEL_FILTER_SHA256 = "25f06f4b789a2844d26f9732de9e5f23ae31915103a9ac85e935f3b4b579ed57"


def test_the_default_filter_is_unchanged():
    assert hashlib.sha256(seccomp.program(1234)).hexdigest() == KERNEL_FILTER_SHA256
    assert seccomp.program(1234) == seccomp.program(1234, "kernel")


def test_the_capture_profile_also_denies_directory_listings_and_anonymous_files():
    kernel, capture = seccomp.program(1234), seccomp.program(1234, "capture")
    assert len(capture) == len(kernel) + 2 * 8 * 3   # three more (compare, kill) pairs
    extra = set(seccomp.PROFILES["capture"].values()) - set(seccomp.PROFILES["candidate"].values())
    assert extra == {78, 217, 319}      # getdents, getdents64, memfd_create
    for nr in extra:
        assert seccomp._ins(seccomp.JEQ_K, nr, 0, 1) in capture
        assert seccomp._ins(seccomp.JEQ_K, nr, 0, 1) not in kernel


def test_an_unknown_profile_is_an_error():
    with pytest.raises(ValueError, match="unknown seccomp profile"):
        seccomp.program(1, "lenient")
