"""The harness's roofline probe is the ceiling every timing is held against (the physics
check) and the denominator of every "% of peak" figure, so it must count only the work its
loop really does."""
import re
import subprocess

import pytest

from kernels.harness import roofline


def _fma_loop_instructions(tmp_path, vec_bytes: int) -> int:
    """FMA instructions in the compiled probe function, built as the harness builds it."""
    asm = tmp_path / f"roofline{vec_bytes}.s"
    subprocess.run(["gcc", *roofline.CFLAGS, f"-DVEC_BYTES={vec_bytes}", "-S", "-o", str(asm),
                    str(roofline.HERE / "roofline.c")], check=True, capture_output=True, timeout=120)
    text = asm.read_text()
    start = re.search(r"^fma_chains[.\w]*:", text, re.M)
    assert start, "the probe function is not in the assembly"
    end = text.index(".cfi_endproc", start.end())
    return len(re.findall(r"^\s*vfmadd\w*ps\s", text[start.end():end], re.M))


@pytest.mark.parametrize("vec_bytes", [32, 64])
def test_the_fma_probe_runs_every_fma_its_flop_count_assumes(tmp_path, vec_bytes):
    """GCC 12 at -O3 proved 4 of the 12 chains equal to others and dropped them: the probe ran
    8 FMAs per iteration while counting 12, and reported 1.5x the cores' peak (353 GFLOP/s on a
    2-core Zen 4 at 3.5 GHz, whose 2 FMA pipes give ~230)."""
    cpuinfo = open("/proc/cpuinfo").read()
    if "fma" not in cpuinfo:
        pytest.skip("no FMA on this host")
    if vec_bytes == 64 and "avx512f" not in cpuinfo:
        # roofline.measure_host builds the 64-byte probe only where AVX-512F is: an AVX2 host's
        # GCC cannot keep 64-byte vectors in its 16 registers (a Zen 3 VM, 2026-12-07)
        pytest.skip("no AVX-512F on this host: the harness does not build the 64-byte probe here")
    n = _fma_loop_instructions(tmp_path, vec_bytes)
    assert n > 0 and n % roofline.CHAINS == 0, f"{n} FMAs in the probe's loop, {roofline.CHAINS} counted per iteration"


def test_ceilings_measured_by_an_older_probe_are_not_reused(tmp_path, monkeypatch):
    """The cache keeps the highest figure ever seen per host; a probe that changed (the fix
    above) must measure again rather than inherit an old, higher figure."""
    monkeypatch.setenv("INT21_CACHE_DIR", str(tmp_path))
    calls = []
    monkeypatch.setattr(roofline, "measure_host", lambda fp: calls.append(1) or {"peak_gflops": 100.0 * len(calls)})
    fp = {"cpu": "test"}
    assert roofline.cpu_ceilings(fp)["peak_gflops"] == 100.0
    assert roofline.cpu_ceilings(fp)["peak_gflops"] == 100.0 and len(calls) == 1   # cached
    monkeypatch.setattr(roofline, "PROBE_DIGEST", "another probe")
    assert roofline.cpu_ceilings(fp)["peak_gflops"] == 200.0 and len(calls) == 2
