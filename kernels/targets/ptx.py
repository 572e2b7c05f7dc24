"""PTX target: a candidate is PTX text with one ``.entry kernel`` taking the workload's CUDA
ABI (the same parameters, in the same order, as the CUDA seeds' ``extern "C" __global__ void
kernel(...)``: pointers and int64 dims as ``.u64``, float scalars as ``.f32``).

Compiling: the design-space params go through the template step
(:mod:`kernels.targets.ptx_template`: ``{{NAME}}``, ``@if``, ``@for``, ``@define``), the
expanded text is checked again by the PTX static rules, and ``ptxas -v`` assembles it into a
cubin for ``sm_90a`` by default (the goal's ``arch`` chooses; a plain ``sm_90``, the
harness's default, becomes ``sm_90a``: the same chip with Hopper's arch-specific
instructions, ``wgmma`` and ``setmaxnreg``, and its cubin loads on every sm_90 GPU). No GPU is
needed for that. Everything after the build is the CUDA target's: the resource report and
its limits, the cubin audit, ``can_run``, and on a GPU host the same runner
(:mod:`kernels.targets.cuda_runner`) loading the cubin through CuPy.
"""
from __future__ import annotations

import functools
import re
from pathlib import Path

from kernels.harness.static_ptx import check_ptx
from kernels.targets.base import Artifact, CompileFailure
from kernels.targets.cuda import CudaTarget, nvcc_path
from kernels.targets.nvidia import ARCH_RE, build_cubin, find_tool, run_tool
from kernels.targets.ptx_template import TemplateError, expand_lines

DEFAULT_ARCH = "sm_90a"


def ptxas_path() -> str | None:
    """``INT21_PTXAS``, else ``ptxas`` on PATH, beside nvcc, or under ``CUDA_HOME``/``CUDA_PATH``
    or /usr/local/cuda."""
    nvcc = nvcc_path()
    return find_tool("ptxas", "INT21_PTXAS", (str(Path(nvcc).parent.parent),) if nvcc else ())


@functools.lru_cache(maxsize=4)
def ptxas_version(ptxas: str) -> str:
    """``ptxas release 13.0, V13.0.88 (cuda_13.0.r13.0/compiler.36424714_0)`` or ''."""
    out = run_tool([ptxas, "--version"])
    release = next((ln.split("tools, ", 1)[-1].strip() for ln in out.splitlines() if "release" in ln), "")
    build = next((ln.split("Build ", 1)[-1].strip() for ln in out.splitlines() if ln.startswith("Build")), "")
    return f"ptxas {release} ({build})" if build else (f"ptxas {release}" if release else "")


class PtxTarget(CudaTarget):
    name = "ptx"
    language = "ptx"
    default_arch = DEFAULT_ARCH

    def available(self) -> tuple[bool, str]:
        if ptxas_path() is None:
            return False, ("no PTX assembler: ptxas is not on PATH (nor beside nvcc, under CUDA_HOME or "
                           "/usr/local/cuda; INT21_PTXAS may name it)")
        return True, ""

    def toolchain(self) -> dict:
        tool = ptxas_path()
        version = ptxas_version(tool) if tool else None
        return {"compiler": version, "ptxas": version}

    def arch_for(self, arch: str | None) -> str:
        if not arch:
            return DEFAULT_ARCH
        m = re.fullmatch(r"sm_(\d+)", arch)
        return f"{arch}a" if m and int(m.group(1)) >= 90 else arch

    def flags(self, options: dict) -> list[str]:
        # fast_math has no meaning here: a PTX candidate spells out its own approximations
        return [f"-arch={self.arch_for(options.get('arch'))}", "-O3", "-v"]

    def compile(self, source: str, params: dict, options: dict) -> Artifact | CompileFailure:
        asked = options.get("arch")
        if asked is not None and (not isinstance(asked, str) or not ARCH_RE.match(asked)):
            return CompileFailure(f"unknown GPU architecture {asked!r}: expected sm_<number> with an optional "
                                  "'a' suffix, such as sm_90a")
        arch = self.arch_for(asked)
        tool = ptxas_path()
        if tool is None:
            return CompileFailure(self.available()[1])
        try:
            text, origins = expand_lines(source, params, arch)
        except TemplateError as exc:
            return CompileFailure(f"the PTX template did not expand: {exc}")
        findings = check_ptx(text, options.get("entry", "kernel"))
        if findings:
            first = findings[0]
            where = origins[first.line - 1] if 0 < first.line <= len(origins) else first.line
            return CompileFailure(f"the expanded PTX, at template line {where}: {first.text} ({first.rule})",
                                  text[-4000:], refused=True)
        flags = self.flags(options)
        argv = [tool, *flags, "-o", "kernel.cubin", "kernel.ptx"]
        out = build_cubin("ptx", text, "kernel.ptx", argv, [" ".join(flags), ptxas_version(tool)], options, arch)
        if isinstance(out, CompileFailure) and origins:
            out.reason = _template_lines(out.reason, origins)
        return out


def _template_lines(reason: str, origins: list[int]) -> str:
    """ptxas counts lines of the expanded text; say which template line that was."""
    def one(m: re.Match) -> str:
        n = int(m.group(1))
        src = origins[n - 1] if 0 < n <= len(origins) else None
        return m.group(0) if src in (None, n) else f"line {n} (template line {src})"
    return re.sub(r"\bline (\d+)", one, reason)
