"""CUDA target: one ``extern "C" __global__ void kernel(...)`` per candidate, built into a
cubin for one GPU architecture (default ``sm_90``, an H100/H200).

Compiling needs no GPU: ``nvcc -cubin`` (or, on a host with CuPy but no toolkit, NVRTC in
a child process) runs in the sandbox with limits, and ptxas's ``-v`` report gives the
resources the audit holds against the constraints (registers, spills, shared memory,
stack). Running needs CuPy and a GPU; the cubin is only ever loaded inside a sandbox child
(:mod:`kernels.targets.cuda_runner`). Builds are cached by source + params + flags +
compiler version.
"""
from __future__ import annotations

import functools
import json
import os
import sys
from pathlib import Path

from kernels.targets.base import Artifact, AuditResult, CompileFailure, param_prelude
from kernels.targets.device import DeviceRunner
from kernels.targets.nvidia import (ALLOWED_DEVICE_IMPORTS, ARCH_RE, DEFAULT_LIMITS, MAX_SHARED,  # noqa: F401
                                    audit_cubin, build_cubin, cpu_model, find_tool, parse_ptxas, read_cubin,
                                    run_tool as _run)
from kernels.targets.nvidia import gpu_info as _gpu_info  # a seam the tests and the fleet worker use

DEFAULT_ARCH = "sm_90"

_STDINT_SHIM = b"""#pragma once
typedef signed char int8_t; typedef unsigned char uint8_t;
typedef short int16_t; typedef unsigned short uint16_t;
typedef int int32_t; typedef unsigned int uint32_t;
typedef long long int64_t; typedef unsigned long long uint64_t;
typedef long long intptr_t; typedef unsigned long long uintptr_t;
#define INT32_MAX 2147483647
#define INT64_MAX 9223372036854775807LL
"""


# --------------------------------------------------------------------------- toolchain

def nvcc_path() -> str | None:
    """``INT21_NVCC``, else ``nvcc`` on PATH, else under ``CUDA_HOME``/``CUDA_PATH`` or
    /usr/local/cuda."""
    return find_tool("nvcc", "INT21_NVCC")


@functools.lru_cache(maxsize=4)
def nvcc_version(nvcc: str) -> str:
    """``release 13.0, V13.0.88 (cuda_13.0.r13.0/compiler.36424714_0)`` or ''."""
    out = _run([nvcc, "--version"])
    release = next((ln.split("tools, ", 1)[-1].strip() for ln in out.splitlines() if "release" in ln), "")
    build = next((ln.split("Build ", 1)[-1].strip() for ln in out.splitlines() if ln.startswith("Build")), "")
    return f"{release} ({build})" if build else release


@functools.lru_cache(maxsize=1)
def nvrtc_version() -> str | None:
    """NVRTC through CuPy, checked in a child (loading the library can fail noisily)."""
    out = _run([sys.executable, "-s", "-B", "-c",
                "from cupy_backends.cuda.libs import nvrtc; print('nvrtc %d.%d' % nvrtc.getVersion())"], 60)
    line = out.strip().splitlines()[-1] if out.strip() else ""
    return line if line.startswith("nvrtc ") else None


def _backend() -> tuple[str, str, str] | None:
    """(kind, tool, version): nvcc preferred, NVRTC when only CuPy is there."""
    nvcc = nvcc_path()
    if nvcc:
        return "nvcc", nvcc, nvcc_version(nvcc)
    version = nvrtc_version()
    if version:
        return "nvrtc", sys.executable, version
    return None


def _nvrtc_include_dirs() -> list[str]:
    dirs = []
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and (Path(root) / "include" / "cuda_runtime.h").exists():
            dirs.append(str(Path(root) / "include"))
    for entry in sys.path:  # pip's nvidia-cuda-runtime ships the toolkit headers
        for sub in ("nvidia/cu13/include", "nvidia/cuda_runtime/include"):
            p = Path(entry) / sub
            if (p / "cuda_runtime.h").exists() or (p / "cuda_fp16.h").exists():
                dirs.append(str(p))
    return list(dict.fromkeys(dirs))


# --------------------------------------------------------------------------- target

class CudaTarget(DeviceRunner):
    """CUDA C++ → cubin. The ``ptx`` target shares all but the compiler (``kernels.targets.ptx``);
    the running is the GPU half of the target seam (``kernels.targets.device``)."""

    name = "cuda"
    language = "cuda"
    default_arch = DEFAULT_ARCH

    def available(self) -> tuple[bool, str]:
        if _backend() is None:
            return False, ("no CUDA compiler: nvcc is not on PATH (nor under CUDA_HOME or /usr/local/cuda; "
                           "INT21_NVCC may name it) and CuPy's NVRTC is not importable")
        return True, ""

    def can_run(self) -> tuple[bool, str]:
        try:
            info, why = _gpu_info()
        except Exception as exc:  # never raise: a broken driver is a reason, not a crash
            info, why = None, f"{type(exc).__name__}: {exc}"
        if info is None:
            return False, f"no CUDA GPU on this host ({why})"
        return True, ""

    def natural_values(self, space) -> dict:
        return {}   # launch geometry has no one obvious starting point across GPUs

    def toolchain(self) -> dict:
        backend = _backend()
        return {"compiler": backend[2] if backend else None,
                "nvcc": nvcc_version(backend[1]) if backend and backend[0] == "nvcc" else None}

    def fingerprint(self) -> dict:
        base = {"target": self.name, **self.toolchain(), "arch": self.default_arch, "host": cpu_model()}
        try:
            info, _why = _gpu_info()
        except Exception:
            info = None
        if info is None:
            return {**base, "gpu": None}
        return {**base, **info, "arch": self.arch_for(info["sm"])}

    def arch_for(self, arch: str | None) -> str:
        """The architecture a build for ``arch`` (the goal's, or this GPU's) is made for."""
        return arch or self.default_arch

    def flags(self, options: dict) -> list[str]:
        arch = self.arch_for(options.get("arch"))
        flags = ["-cubin", f"-arch={arch}", "-O3", "-Xptxas", "-v"]
        if options.get("fast_math"):
            flags.append("-use_fast_math")
        return flags

    def compile(self, source: str, params: dict, options: dict) -> Artifact | CompileFailure:
        arch = options.get("arch") or self.default_arch
        if not isinstance(arch, str) or not ARCH_RE.match(arch):
            return CompileFailure(f"unknown GPU architecture {arch!r}: expected sm_<number> with an optional "
                                  "'a' suffix, such as sm_90 or sm_90a")
        backend = _backend()
        if backend is None:
            return CompileFailure(self.available()[1])
        kind, tool, version = backend
        flags = self.flags(options)
        text = param_prelude(params) + source
        if kind == "nvcc":
            argv = [tool, *flags, "-o", "kernel.cubin", "kernel.cu"]
        else:
            argv = [tool, "-s", "-B", "-m", "kernels.targets.cuda", "nvrtc", "kernel.cu", "kernel.cubin",
                    json.dumps(_nvrtc_options(flags) + [f"-I{d}" for d in _nvrtc_include_dirs()])]
        return build_cubin("cuda", text, "kernel.cu", argv, [" ".join(flags), kind, version], options, arch)

    # ------------------------------------------------------------------ audit

    def audit(self, artifact: Artifact, options: dict) -> AuditResult:
        return audit_cubin(artifact, options, self.default_arch)

    # ------------------------------------------------------------------ running (GPU hosts)

    def launch(self, workload, shape, params) -> tuple:
        """(grid, block, dynamic shared bytes) of this target's template for ``shape``."""
        return workload.template(self.name).launch(shape, params)


def _nvrtc_options(flags: list[str]) -> list[str]:
    """nvcc flags → NVRTC options (NVRTC runs ptxas at -O3 by default)."""
    out, it = [], iter(flags)
    for f in it:
        if f.startswith("-arch="):
            out.append("--gpu-architecture=" + f.split("=", 1)[1])
        elif f == "-Xptxas":
            out.append("--ptxas-options=" + next(it))
        elif f == "-use_fast_math":
            out.append("--use_fast_math")
    return out


# --------------------------------------------------------------------------- NVRTC child

def _nvrtc_main(src: str, out: str, options_json: str) -> int:
    """Runs inside the sandboxed compile child: NVRTC through CuPy, log to stdout."""
    from cupy_backends.cuda.libs import nvrtc
    options = json.loads(options_json)
    text = Path(src).read_text()
    prog = nvrtc.createProgram(text, "kernel.cu", [_STDINT_SHIM, _STDINT_SHIM], [b"stdint.h", b"cstdint"])
    ok = True
    try:
        nvrtc.compileProgram(prog, options)
    except Exception:
        ok = False
    log = nvrtc.getProgramLog(prog).rstrip("\0")
    sys.stdout.write(log)
    if not ok:
        return 1
    Path(out).write_bytes(nvrtc.getCUBIN(prog))
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "nvrtc":
        sys.exit(_nvrtc_main(sys.argv[2], sys.argv[3], sys.argv[4]))
    print("usage: python -m kernels.targets.cuda nvrtc SRC OUT OPTIONS_JSON", file=sys.stderr)
    sys.exit(2)
