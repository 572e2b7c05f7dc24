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
import hashlib
import json
import os
import platform
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kernels.harness.sandbox import Limits, minimal_env, run_process
from kernels.targets.device import DeviceRunner
from kernels.targets.base import Artifact, AuditResult, CompileFailure, cache_dir, param_prelude

DEFAULT_ARCH = "sm_90"
ARCH_RE = re.compile(r"^sm_\d+a?$")

# Largest static + dynamic shared memory one block may use, by compute capability (bytes).
MAX_SHARED = {70: 96, 72: 96, 75: 64, 80: 163, 86: 99, 87: 163, 89: 99, 90: 227,
              100: 227, 101: 227, 103: 227, 110: 227, 120: 99, 121: 99}
DEFAULT_LIMITS = {"max_registers": 255, "max_spill_bytes": 0, "max_stack_bytes": None}

# Device-side functions a cubin may import (resolved by the driver at load). Device
# malloc/free and printf (vprintf) are not among them: a kernel has no business with them.
ALLOWED_DEVICE_IMPORTS: frozenset[str] = frozenset()

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
    explicit = os.environ.get("INT21_NVCC")
    if explicit:
        return explicit if os.path.isfile(explicit) and os.access(explicit, os.X_OK) else None
    found = shutil.which("nvcc")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and (Path(root) / "bin" / "nvcc").is_file() and os.access(Path(root) / "bin" / "nvcc", os.X_OK):
            return str(Path(root) / "bin" / "nvcc")
    return None


def _run(argv, timeout=30) -> str:
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        return r.stdout + r.stderr
    except (OSError, subprocess.TimeoutExpired):
        return ""


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


@functools.lru_cache(maxsize=1)
def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


@functools.lru_cache(maxsize=1)
def _gpu_info() -> tuple[dict | None, str]:
    """(description of device 0, "") or (None, why not); asked once per process."""
    try:
        import cupy
    except Exception as exc:  # ImportError, or a broken install raising anything
        return None, f"CuPy is not importable: {type(exc).__name__}: {exc}".strip()
    try:
        rt = cupy.cuda.runtime
        count = rt.getDeviceCount()
        if count < 1:
            return None, "the CUDA runtime sees no device"
        props = rt.getDeviceProperties(0)
        name = props.get("name", b"")
        return {
            "gpu": name.decode() if isinstance(name, bytes) else str(name),
            "gpu_count": count,
            "sm": f"sm_{props.get('major', 0)}{props.get('minor', 0)}",
            "sms": props.get("multiProcessorCount"),
            "memory_bytes": props.get("totalGlobalMem"),
            "shared_per_block_optin": props.get("sharedMemPerBlockOptin"),
            "l2_bytes": props.get("l2CacheSize"),
            "clock_khz": props.get("clockRate"),
            "memory_clock_khz": props.get("memoryClockRate"),
            "bus_width_bits": props.get("memoryBusWidth"),
            "driver": _cuda_version_text(rt.driverGetVersion()),
            "runtime": _cuda_version_text(rt.runtimeGetVersion()),
            "cupy": cupy.__version__,
        }, ""
    except Exception as exc:
        return None, f"{type(exc).__name__}: {exc}".strip()


def _cuda_version_text(v: int) -> str:
    return f"{v // 1000}.{(v % 1000) // 10}"


# --------------------------------------------------------------------------- ptxas report

_NUM = r"(\d+)"


def parse_ptxas(log: str, entry: str = "kernel") -> dict:
    """Resources of ``entry`` from ptxas's ``-v`` report (nvcc's or NVRTC's spelling).

    ``Compiling entry function 'kernel' for 'sm_90'`` opens an entry; ``Function properties
    for X`` followed by ``N bytes stack frame, N bytes spill stores, N bytes spill loads``
    gives X's frame; ``Used N registers, used N barriers, N bytes smem, N bytes cmem[k]``
    belongs to the entry being compiled. Keys absent from the report are absent here.
    """
    res: dict = {}
    current = props_for = None
    for raw in log.splitlines():
        line = raw.strip()
        m = re.search(r"Compiling entry function '([^']+)' for '(\w+)'", line)
        if m:
            current = m.group(1)
            if current == entry:
                res["ptxas_arch"] = m.group(2)
            continue
        m = re.search(r"Function properties for (\S+)", line)
        if m:
            props_for = m.group(1)
            continue
        if "bytes stack frame" in line and props_for == entry:
            for key, pat in (("stack_bytes", r"(\d+) bytes stack frame"),
                             ("spill_store_bytes", r"(\d+) bytes spill stores"),
                             ("spill_load_bytes", r"(\d+) bytes spill loads")):
                mm = re.search(pat, line)
                if mm:
                    res[key] = int(mm.group(1))
            props_for = None
            continue
        if re.search(r"\bUsed \d+ registers", line) and current == entry:
            for key, pat in (("registers", r"Used (\d+) registers"),
                             ("barriers", r"used (\d+) barriers"),
                             ("shared_bytes", r"(\d+) bytes smem"),
                             ("cumulative_stack_bytes", r"(\d+) bytes cumulative stack size")):
                mm = re.search(pat, line)
                if mm:
                    res[key] = int(mm.group(1))
            cmem = {int(b): int(n) for n, b in re.findall(r"(\d+) bytes cmem\[(\d+)\]", line)}
            if cmem:
                res["param_const_bytes"] = cmem.get(0, 0)
                res["const_bytes"] = sum(v for k, v in cmem.items() if k != 0)
            continue
        m = re.search(r"(\d+) bytes gmem", line)
        if m:
            res["global_bytes"] = int(m.group(1))
    if "registers" in res:
        res.setdefault("shared_bytes", 0)
        res.setdefault("spill_store_bytes", 0)
        res.setdefault("spill_load_bytes", 0)
        res.setdefault("stack_bytes", 0)
    return res


# --------------------------------------------------------------------------- cubin (ELF)

EM_CUDA = 190


def read_cubin(path: Path) -> dict | None:
    """Symbols and section sizes of a cubin, read directly (no cuobjdump needed).

    Returns {"machine", "sm", "sections": {name: size}, "defined": [(name, type, bind)],
    "undefined": [(name, type)]}, or None when the file is not a 64-bit ELF.
    """
    try:
        data = Path(path).read_bytes()
    except OSError:
        return None
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return None
    try:
        machine = struct.unpack_from("<H", data, 0x12)[0]
        flags = struct.unpack_from("<I", data, 0x30)[0]
        shoff = struct.unpack_from("<Q", data, 0x28)[0]
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
        sections = []
        for i in range(shnum):
            name, stype, _flags, _addr, off, size, link, _info, _align, entsize = struct.unpack_from(
                "<IIQQQQIIQQ", data, shoff + i * shentsize)
            sections.append((name, stype, off, size, link, entsize))

        def cstr(table_off: int, idx: int) -> str:
            end = data.index(b"\0", table_off + idx)
            return data[table_off + idx:end].decode("utf-8", "replace")

        shstr_off = sections[shstrndx][2]
        names = [cstr(shstr_off, s[0]) for s in sections]
        info = {"machine": machine, "sm": (flags >> 8) & 0xFF if data[8] >= 8 else flags & 0xFF,
                "sections": {}, "defined": [], "undefined": []}
        for nm, s in zip(names, sections):
            if nm:
                info["sections"][nm] = info["sections"].get(nm, 0) + s[3]
        for s in sections:
            if s[1] != 2:  # SHT_SYMTAB
                continue
            str_off = sections[s[4]][2]
            for k in range(s[3] // 24):
                st_name, st_info, _other, shndx, _value, _size = struct.unpack_from("<IBBHQQ", data, s[2] + k * 24)
                if not st_name:
                    continue
                name, stype, bind = cstr(str_off, st_name), st_info & 0xF, st_info >> 4
                if stype == 3:  # STT_SECTION
                    continue
                if shndx == 0:
                    info["undefined"].append((name, {1: "object", 2: "function"}.get(stype, "other")))
                else:
                    info["defined"].append((name, {1: "object", 2: "function"}.get(stype, "other"),
                                            {0: "local", 1: "global", 2: "weak"}.get(bind, "other")))
        return info
    except (struct.error, IndexError, ValueError):
        return None


def _cubin_resources(info: dict | None) -> dict:
    if not info:
        return {}
    const = sum(size for name, size in info["sections"].items()
                if name.startswith(".nv.constant") and not name.startswith(".nv.constant0"))
    return {"const_bytes": const}


# --------------------------------------------------------------------------- target

class CudaTarget(DeviceRunner):
    name = "cuda"
    language = "cuda"

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

    def fingerprint(self) -> dict:
        backend = _backend()
        base = {"target": "cuda", "compiler": backend[2] if backend else None,
                "nvcc": nvcc_version(backend[1]) if backend and backend[0] == "nvcc" else None,
                "arch": DEFAULT_ARCH, "host": _cpu_model()}
        try:
            info, _why = _gpu_info()
        except Exception:
            info = None
        if info is None:
            return {**base, "gpu": None}
        return {**base, **info, "arch": info["sm"]}

    def flags(self, options: dict) -> list[str]:
        arch = options.get("arch") or DEFAULT_ARCH
        flags = ["-cubin", f"-arch={arch}", "-O3", "-Xptxas", "-v"]
        if options.get("fast_math"):
            flags.append("-use_fast_math")
        return flags

    def compile(self, source: str, params: dict, options: dict) -> Artifact | CompileFailure:
        arch = options.get("arch") or DEFAULT_ARCH
        if not isinstance(arch, str) or not ARCH_RE.match(arch):
            return CompileFailure(f"unknown GPU architecture {arch!r}: expected sm_<number> with an optional "
                                  "'a' suffix, such as sm_90 or sm_90a")
        backend = _backend()
        if backend is None:
            return CompileFailure(self.available()[1])
        kind, tool, version = backend
        flags = self.flags(options)
        text = param_prelude(params) + source
        key = hashlib.sha256("\0".join([text, " ".join(flags), kind, version]).encode()).hexdigest()[:32]
        out_dir = cache_dir() / "cuda"
        out_dir.mkdir(parents=True, exist_ok=True)
        artifact = out_dir / f"{key}.cubin"
        log_path = artifact.with_suffix(".log")
        if artifact.exists() and log_path.exists():
            log = log_path.read_text()
            return Artifact(artifact, 0.0, log, cached=True, resources=self._resources(log, artifact, arch))
        start = time.monotonic()
        timeout = float(options.get("compile_timeout", 120))
        with tempfile.TemporaryDirectory(prefix="int21-nvcc-") as tmp:
            src = Path(tmp) / "kernel.cu"
            src.write_text(text)
            limits = Limits(wall_seconds=timeout, cpu_seconds=max(60, int(timeout * 2)),
                            memory_mb=8192, file_mb=256)
            if kind == "nvcc":
                argv = [tool, *flags, "-o", "kernel.cubin", "kernel.cu"]
            else:
                argv = [tool, "-s", "-B", "-m", "kernels.targets.cuda", "nvrtc", "kernel.cu", "kernel.cubin",
                        json.dumps(_nvrtc_options(flags) + [f"-I{d}" for d in _nvrtc_include_dirs()])]
            # CuPy (NVRTC child) would otherwise make a cache under the child's HOME
            env = minimal_env({"TMPDIR": tmp, "CUPY_CACHE_DIR": str(Path(tmp) / "cupy")})
            result = run_process(argv, cwd=Path(tmp), limits=limits, env=env)
            seconds = time.monotonic() - start
            log = (result.stdout + result.stderr)[-20000:]
            if result.timed_out:
                return CompileFailure(f"compilation ran past its {limits.wall_seconds:g} s limit",
                                      log, timed_out=True, seconds=seconds)
            if result.returncode != 0 or not (Path(tmp) / "kernel.cubin").exists():
                return CompileFailure(f"the compiler rejected the source: {_first_error(log)}", log,
                                      seconds=seconds)
            tmp_art = out_dir / f".{key}.{os.getpid()}.tmp"
            shutil.copyfile(Path(tmp) / "kernel.cubin", tmp_art)
            os.replace(tmp_art, artifact)
            log_path.write_text(log)
        return Artifact(artifact, seconds, log, resources=self._resources(log, artifact, arch))

    @staticmethod
    def _resources(log: str, path: Path, arch: str) -> dict:
        res = parse_ptxas(log)
        for k, v in _cubin_resources(read_cubin(path)).items():
            res.setdefault(k, v)
        res["arch"] = arch
        res["cubin_bytes"] = path.stat().st_size if path.exists() else 0
        return res

    # ------------------------------------------------------------------ audit

    def audit(self, artifact: Artifact, options: dict) -> AuditResult:
        problems: list[str] = []
        res = dict(artifact.resources)
        arch = res.get("arch") or options.get("arch") or DEFAULT_ARCH
        limits = {**DEFAULT_LIMITS, "max_shared_bytes": _max_shared(arch)}
        limits.update({k: options[k] for k in ("max_registers", "max_shared_bytes", "max_spill_bytes",
                                                "max_stack_bytes") if k in options})
        entry = options.get("entry", "kernel")
        info = read_cubin(artifact.path)
        details: dict = {"resources": res, "limits": limits}
        if info is None or info["machine"] != EM_CUDA:
            problems.append("is not a CUDA binary (no cubin ELF for the NVIDIA architecture)")
            return AuditResult(False, problems, details)
        details["cubin_sm"] = info["sm"]
        functions = [n for n, t, b in info["defined"] if t == "function" and b in ("global", "weak")]
        details["functions"] = functions
        if entry not in functions:
            mangled = [f for f in functions if f.startswith("_Z") and entry in f]
            hint = f" (found the C++ name {mangled[0]}: declare it extern \"C\")" if mangled else ""
            problems.append(f"does not export the entry point '{entry}'{hint}")
        imports = sorted({n for n, t in info["undefined"] if t == "function"})
        details["imports"] = imports
        bad = [n for n in imports if n not in ALLOWED_DEVICE_IMPORTS]
        if bad:
            problems.append(f"calls device functions outside the allowlist: {', '.join(bad)}")
        if "registers" not in res:
            problems.append(f"has no resource report for '{entry}' from ptxas (registers and spills unknown)")
        else:
            if limits["max_registers"] is not None and res["registers"] > limits["max_registers"]:
                problems.append(f"uses {res['registers']} registers per thread (limit {limits['max_registers']})")
            spills = res.get("spill_store_bytes", 0) + res.get("spill_load_bytes", 0)
            if limits["max_spill_bytes"] is not None and spills > limits["max_spill_bytes"]:
                problems.append(f"uses {spills} bytes of register spills ({res.get('spill_store_bytes', 0)} "
                                f"stored, {res.get('spill_load_bytes', 0)} loaded; limit {limits['max_spill_bytes']})")
            if limits["max_shared_bytes"] is not None and res.get("shared_bytes", 0) > limits["max_shared_bytes"]:
                problems.append(f"uses {res['shared_bytes']} bytes of static shared memory "
                                f"(limit {limits['max_shared_bytes']} on {arch})")
            stack = max(res.get("stack_bytes", 0), res.get("cumulative_stack_bytes", 0))
            if limits["max_stack_bytes"] is not None and stack > limits["max_stack_bytes"]:
                problems.append(f"uses {stack} bytes of stack per thread (limit {limits['max_stack_bytes']})")
        return AuditResult(not problems, problems, details)


def _max_shared(arch: str) -> int:
    m = re.match(r"sm_(\d+)", arch or "")
    return MAX_SHARED.get(int(m.group(1)) if m else 90, 227) * 1024


def _first_error(log: str) -> str:
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    for ln in lines:
        if re.search(r"\berror\b|\bfatal\b", ln, re.I):
            return ln[:300]
    return (lines[0][:300] if lines else "no output from the compiler")


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
