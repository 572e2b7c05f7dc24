"""The CPU target's compile cache: keyed by everything that decides the shared object."""
import shutil

from kernels.targets import cpu

SOURCE = "#include <int21/simd.h>\n#include <stdint.h>\nvoid kernel(float *y, int64_t n) { for (int64_t i = 0; i < n; i++) y[i] = 1.0f; }\n"


def test_a_changed_harness_header_builds_a_new_shared_object(tmp_path, monkeypatch):
    monkeypatch.setenv("INT21_CACHE_DIR", str(tmp_path / "cache"))
    include = tmp_path / "include"
    shutil.copytree(cpu.INCLUDE_DIR, include)
    monkeypatch.setattr(cpu, "INCLUDE_DIR", include)
    cpu.include_digest.cache_clear()
    target = cpu.CpuTarget()
    first = target.compile(SOURCE, {}, {})
    assert not first.cached and target.compile(SOURCE, {}, {}).cached   # same inputs: reused

    header = include / "int21" / "simd.h"
    header.write_text(header.read_text() + "\n/* a later revision of the helpers */\n")
    cpu.include_digest.cache_clear()
    second = target.compile(SOURCE, {}, {})
    cpu.include_digest.cache_clear()
    assert not second.cached and second.path != first.path
