"""What the NVIDIA targets (``cuda``, ``ptx``) share: the GPU on this host, the sandboxed and
cached build of a cubin, ptxas's ``-v`` resource report, the cubin's ELF symbols, and the
audit that holds a cubin's imports and resources against the goal's limits.

Nothing here needs a GPU; :func:`gpu_info` asks CuPy once per process and says why not.
"""
from __future__ import annotations

import functools
import hashlib
import os
import platform
import re
import shutil
import struct
import subprocess
import tempfile
import time
from pathlib import Path

from kernels.harness.sandbox import Limits, minimal_env, run_process
from kernels.targets.base import Artifact, AuditResult, CompileFailure, cache_dir

# Largest static + dynamic shared memory one block may use, by compute capability (bytes).
MAX_SHARED = {70: 96, 72: 96, 75: 64, 80: 163, 86: 99, 87: 163, 89: 99, 90: 227,
              100: 227, 101: 227, 103: 227, 110: 227, 120: 99, 121: 99}
DEFAULT_LIMITS = {"max_registers": 255, "max_spill_bytes": 0, "max_stack_bytes": None}
ARCH_RE = re.compile(r"^sm_\d+a?$")

# Device-side functions a cubin may import (resolved by the driver at load). Device
# malloc/free and printf (vprintf) are not among them: a kernel has no business with them.
ALLOWED_DEVICE_IMPORTS: frozenset[str] = frozenset()


def find_tool(name: str, env_var: str, roots: tuple = ()) -> str | None:
    """``$env_var`` when set (and executable), else ``name`` on PATH, else ``bin/name`` under
    ``roots``, ``CUDA_HOME``, ``CUDA_PATH`` or /usr/local/cuda."""
    explicit = os.environ.get(env_var)
    if explicit:
        return explicit if os.path.isfile(explicit) and os.access(explicit, os.X_OK) else None
    found = shutil.which(name)
    if found:
        return found
    for root in (*roots, os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        tool = Path(root or "/nonexistent") / "bin" / name
        if tool.is_file() and os.access(tool, os.X_OK):
            return str(tool)
    return None


def run_tool(argv, timeout=30) -> str:
    """A toolchain query (``--version``): its output, or '' when it cannot run."""
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        return r.stdout + r.stderr
    except (OSError, subprocess.TimeoutExpired):
        return ""


# --------------------------------------------------------------------------- host and GPU

@functools.lru_cache(maxsize=1)
def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


@functools.lru_cache(maxsize=1)
def gpu_info() -> tuple[dict | None, str]:
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
            "driver": cuda_version_text(rt.driverGetVersion()),
            "runtime": cuda_version_text(rt.runtimeGetVersion()),
            "cupy": cupy.__version__,
        }, ""
    except Exception as exc:
        return None, f"{type(exc).__name__}: {exc}".strip()


def cuda_version_text(v: int) -> str:
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


def _cubin_sections(info: dict | None) -> dict:
    if not info:
        return {}
    const = sum(size for name, size in info["sections"].items()
                if name.startswith(".nv.constant") and not name.startswith(".nv.constant0"))
    return {"const_bytes": const}


# --------------------------------------------------------------------------- build

def build_cubin(kind: str, text: str, src_name: str, argv: list[str], key_parts: list[str],
                options: dict, arch: str, out_name: str = "kernel.cubin") -> Artifact | CompileFailure:
    """Write ``text`` to ``src_name`` in a fresh folder, run ``argv`` there in the sandbox
    (wall/CPU/memory/file limits, minimal environment) and keep ``out_name`` in the cache
    under ``<cache>/<kind>/`` keyed by ``key_parts`` (source, flags, tool version…). A cached
    build returns at once with its log; a bad candidate is a ``CompileFailure``, never a raise."""
    key = hashlib.sha256("\0".join([text, *key_parts]).encode()).hexdigest()[:32]
    out_dir = cache_dir() / kind
    out_dir.mkdir(parents=True, exist_ok=True)
    artifact = out_dir / f"{key}.cubin"
    log_path = artifact.with_suffix(".log")
    if artifact.exists() and log_path.exists():
        log = log_path.read_text()
        return Artifact(artifact, 0.0, log, cached=True, resources=cubin_resources(log, artifact, arch))
    start = time.monotonic()
    timeout = float(options.get("compile_timeout", 120))
    with tempfile.TemporaryDirectory(prefix=f"int21-{kind}-") as tmp:
        (Path(tmp) / src_name).write_text(text)
        limits = Limits(wall_seconds=timeout, cpu_seconds=max(60, int(timeout * 2)),
                        memory_mb=8192, file_mb=256)
        # CuPy (the NVRTC child) would otherwise make a cache under the child's HOME
        env = minimal_env({"TMPDIR": tmp, "CUPY_CACHE_DIR": str(Path(tmp) / "cupy")})
        result = run_process(argv, cwd=Path(tmp), limits=limits, env=env)
        seconds = time.monotonic() - start
        log = (result.stdout + result.stderr)[-20000:]
        if result.timed_out:
            return CompileFailure(f"compilation ran past its {limits.wall_seconds:g} s limit",
                                  log, timed_out=True, seconds=seconds)
        if result.returncode != 0 or not (Path(tmp) / out_name).exists():
            return CompileFailure(f"the compiler rejected the source: {first_error(log)}", log, seconds=seconds)
        tmp_art = out_dir / f".{key}.{os.getpid()}.tmp"
        shutil.copyfile(Path(tmp) / out_name, tmp_art)
        os.replace(tmp_art, artifact)
        log_path.write_text(log)
    return Artifact(artifact, seconds, log, resources=cubin_resources(log, artifact, arch))


def cubin_resources(log: str, path: Path, arch: str) -> dict:
    """ptxas's report for the entry, plus what the cubin itself says (constant banks, size)."""
    res = parse_ptxas(log)
    for k, v in _cubin_sections(read_cubin(path)).items():
        res.setdefault(k, v)
    res["arch"] = arch
    res["cubin_bytes"] = path.stat().st_size if path.exists() else 0
    return res


# --------------------------------------------------------------------------- audit

def audit_cubin(artifact: Artifact, options: dict, default_arch: str) -> AuditResult:
    """The cubin exports ``options['entry']`` (default ``kernel``), imports nothing outside
    :data:`ALLOWED_DEVICE_IMPORTS`, and its registers, spills, shared memory and stack are
    within the limits (defaults, the architecture's shared memory, then the goal's
    ``max_registers``/``max_shared_bytes``/``max_spill_bytes``/``max_stack_bytes``)."""
    problems: list[str] = []
    res = dict(artifact.resources)
    arch = res.get("arch") or options.get("arch") or default_arch
    limits = {**DEFAULT_LIMITS, "max_shared_bytes": max_shared(arch)}
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


def max_shared(arch: str) -> int:
    m = re.match(r"sm_(\d+)", arch or "")
    return MAX_SHARED.get(int(m.group(1)) if m else 90, 227) * 1024


def first_error(log: str) -> str:
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    for ln in lines:
        if re.search(r"\berror\b|\bfatal\b", ln, re.I):
            return ln[:300]
    return (lines[0][:300] if lines else "no output from the compiler")
