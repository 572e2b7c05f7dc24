"""CPU target: C11 + OpenMP through the system C compiler into a shared object.

The shared object is only ever loaded inside a sandbox child. Builds are cached by
source + params + flags + compiler version.
"""
from __future__ import annotations

import functools
import hashlib
import os
import platform
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from kernels.harness.sandbox import Limits, minimal_env, run_process
from kernels.targets.base import Artifact, AuditResult, CompileFailure, cache_dir, param_prelude

CC = os.environ.get("INT21_CC", "gcc")
INCLUDE_DIR = Path(__file__).resolve().parents[1] / "harness" / "include"
BASE_FLAGS = [f"-I{INCLUDE_DIR}", "-std=gnu11", "-O3", "-march=native", "-fopenmp", "-fPIC", "-shared", "-fno-ident",
              "-Wall", "-Wno-unused-function", "-Wno-unknown-pragmas",
              "-Werror=implicit-function-declaration", "-Werror=implicit-int",
              "-Werror=incompatible-pointer-types", "-Werror=return-type", "-Werror=int-conversion"]

# Undefined symbols a kernel may import: libm, OpenMP's runtime, memory, and the C
# runtime's own housekeeping. Everything else (stdio, sockets, processes, dlopen,
# timers…) fails the audit however the source spelled it.
_LIBM = (r"(exp|exp2|exp10|expm1|log|log2|log10|log1p|sqrt|cbrt|pow|sin|cos|tan|sinh|cosh|tanh|"
         r"asin|acos|atan|atan2|asinh|acosh|atanh|erf|erfc|fma|fmax|fmin|floor|ceil|round|lround|"
         r"llround|rint|lrint|llrint|nearbyint|trunc|fabs|fmod|remainder|copysign|ldexp|frexp|"
         r"hypot|tgamma|lgamma|sincos|modf|scalbn|ilogb|logb|nextafter)[fl]?")
ALLOWED_SYMBOLS = re.compile(
    rf"^(?:{_LIBM}|__{_LIBM}_finite|"
    # GOMP_*: what GCC emits for OpenMP pragmas, but not the legacy GOMP_parallel*_start/
    # GOMP_parallel_end pair (no pragma emits it since GCC 4.9; started and never ended, its
    # workers keep running after the kernel returns) nor the offload-plugin interface.
    r"GOMP_(?!parallel(?:_loop_\w+|_sections)?_start$|parallel_end$|PLUGIN_|OFFLOAD_)\w+|omp_get_(thread_num|num_threads|max_threads|num_procs|level|team_size|"
    r"ancestor_thread_num|dynamic|nested)|omp_set_num_threads|omp_in_parallel|"
    r"memcpy|memmove|memset|memcmp|__memcpy_chk|__memmove_chk|__memset_chk|"
    r"malloc|calloc|realloc|free|aligned_alloc|posix_memalign|"
    r"abort|exit|_exit|__assert_fail|__stack_chk_fail|__cxa_finalize|__gmon_start__|"
    r"_ITM_deregisterTMCloneTable|_ITM_registerTMCloneTable)$")


def _run(argv, timeout=30) -> str:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


@functools.lru_cache(maxsize=1)
def compiler_version() -> str:
    first = _run([CC, "--version"]).splitlines()
    return first[0] if first else ""


@functools.lru_cache(maxsize=1)
def include_digest() -> str:
    """A digest of the harness headers kernels may include: a changed int21/simd.h must not
    reuse shared objects built against the old one."""
    h = hashlib.sha256()
    for path in sorted(INCLUDE_DIR.rglob("*.h")):
        h.update(path.relative_to(INCLUDE_DIR).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


@functools.lru_cache(maxsize=1)
def cpu_fingerprint() -> dict:
    model, flags = platform.processor() or "", []
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and not model.strip("x86_64 "):
                    model = line.split(":", 1)[1].strip()
                elif line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                elif line.startswith("flags"):
                    flags = line.split(":", 1)[1].split()
                    break
    except OSError:
        pass
    interesting = sorted(f for f in flags if f.startswith(("avx", "fma", "sse4", "amx", "f16c", "bmi")))
    llc = 0
    for index in range(8):
        p = Path(f"/sys/devices/system/cpu/cpu0/cache/index{index}")
        if (p / "level").exists() and (p / "level").read_text().strip() == "3":
            size = (p / "size").read_text().strip()
            llc = int(size[:-1]) * (1024 if size.endswith("K") else 1024 * 1024 if size.endswith("M") else 1)
    return {
        "target": "cpu",
        "cpu_model": model,
        "cpu_flags": interesting,
        "cores": os.cpu_count(),
        "llc_bytes": llc,
        "machine": platform.machine(),
        "compiler": compiler_version(),
    }


class CpuTarget:
    name = "cpu"
    language = "c"

    def available(self) -> tuple[bool, str]:
        if shutil.which(CC) is None:
            return False, f"no C compiler: {CC!r} is not on PATH (set INT21_CC)"
        if shutil.which("nm") is None:
            return False, "binutils 'nm' is missing: the symbol audit cannot run"
        return True, ""

    def can_run(self) -> tuple[bool, str]:
        return self.available()

    def fingerprint(self) -> dict:
        return cpu_fingerprint()

    def natural_values(self, space, fingerprint: dict | None = None) -> dict:
        """The CPU templates' conventions: THREADS is the OpenMP thread count and VEC the SIMD
        width in floats (1 scalar, 8 AVX2, 16 AVX-512). A person starts from one thread per
        core and the widest vectors the host has; so does the swarm's first generation."""
        fp = fingerprint or self.fingerprint()
        flags = set(fp.get("cpu_flags") or ())
        widest = 16 if "avx512f" in flags else 8 if {"avx2", "fma"} <= flags else 1
        out = {}
        for name, want in (("THREADS", fp.get("cores") or 1), ("VEC", widest)):
            if name in space.names:
                fits = [v for v in space.param(name).values() if isinstance(v, int) and v <= want]
                if fits:
                    out[name] = max(fits)
        return out

    def flags(self, options: dict) -> list[str]:
        flags = list(BASE_FLAGS)
        if options.get("fast_math"):
            flags.append("-ffast-math")
        return flags

    def compile(self, source: str, params: dict, options: dict) -> Artifact | CompileFailure:
        flags = self.flags(options)
        text = param_prelude(params) + source
        key = hashlib.sha256("\0".join([text, " ".join(flags), compiler_version(), include_digest()]).encode()).hexdigest()[:32]
        out_dir = cache_dir() / "cpu"
        out_dir.mkdir(parents=True, exist_ok=True)
        artifact = out_dir / f"{key}.so"
        if artifact.exists():
            log_path = artifact.with_suffix(".log")
            return Artifact(artifact, 0.0, log_path.read_text() if log_path.exists() else "", cached=True)
        start = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="int21-cc-") as tmp:
            src = Path(tmp) / "kernel.c"
            src.write_text(text)
            limits = Limits(wall_seconds=options.get("compile_timeout", 120), cpu_seconds=300,
                            memory_mb=4096, file_mb=256)
            # Two steps: C → assembly, then assembly → shared object. In between, assembly that
            # came from the source (inline or top-level asm, however its keyword was spelled)
            # is refused before the assembler ever runs (.incbin would read host files).
            result = run_process([CC, *flags, "-S", "-o", "kernel.s", "kernel.c"], cwd=Path(tmp),
                                 limits=limits, env=minimal_env({"TMPDIR": tmp}))
            if result.returncode == 0 and not result.timed_out:
                if "#APP" in (Path(tmp) / "kernel.s").read_text(errors="replace"):
                    return CompileFailure("the source contains assembly after preprocessing (inline or "
                                          "top-level asm is not allowed)", "", seconds=time.monotonic() - start,
                                          refused=True)
                result = run_process([CC, *flags, "-o", "kernel.so", "kernel.s", "-lm"], cwd=Path(tmp),
                                     limits=limits, env=minimal_env({"TMPDIR": tmp}))
            seconds = time.monotonic() - start
            log = (result.stdout + result.stderr)[-20000:]
            if result.timed_out:
                return CompileFailure(f"compilation ran past its {limits.wall_seconds:g} s limit",
                                      log, timed_out=True, seconds=seconds)
            if result.returncode != 0 or not (Path(tmp) / "kernel.so").exists():
                first = next((ln for ln in log.splitlines() if "error" in ln), log.strip()[:200])
                return CompileFailure(f"the compiler rejected the source: {first.strip()}", log, seconds=seconds)
            tmp_art = out_dir / f".{key}.{os.getpid()}.tmp"
            shutil.copyfile(Path(tmp) / "kernel.so", tmp_art)
            os.replace(tmp_art, artifact)
            artifact.with_suffix(".log").write_text(log)
        return Artifact(artifact, seconds, log)

    # ------------------------------------------------------------------ audit

    def audit(self, artifact: Artifact, options: dict) -> AuditResult:
        problems, details = [], {}
        undefined = _symbols(artifact.path, "--undefined-only")
        defined = _symbols(artifact.path, "--defined-only")
        details["imports"] = sorted(undefined)
        bad = sorted(s for s in undefined if not ALLOWED_SYMBOLS.match(s))
        if bad:
            problems.append(f"imports symbols outside the allowlist: {', '.join(bad)}")
        entry = options.get("entry", "kernel")
        if entry not in defined:
            problems.append(f"does not export the entry point '{entry}'")
        init = _section_sizes(artifact.path)
        details["sections"] = init
        baseline = _baseline_sections(tuple(self.flags(options)))
        for sec in (".init_array", ".fini_array", ".ctors", ".dtors", ".preinit_array"):
            if init.get(sec, 0) > baseline.get(sec, 0):
                problems.append(f"runs code when loaded or unloaded ({sec} has extra entries)")
        details["text_bytes"] = init.get(".text", 0)
        problems += _code_problems(artifact.path)
        return AuditResult(not problems, problems, details)


# Instructions a kernel never needs. Inline asm is refused by the static check, but the asm
# keyword and __builtin_ia32_rdtsc can be spelled by token pasting, so look at the code.
_FORBIDDEN_INSN = re.compile(r"^\s*[0-9a-f]+:\s+(syscall|sysenter|int|rdtscp?|rdpmc)\b", re.M)


def _code_problems(path: Path) -> list[str]:
    """What the symbol audit cannot see: system calls and timer reads in the machine code,
    an executable stack (a nested function's trampoline asks for one; bytes on the stack
    then run as code), and indirect functions (their resolvers run inside the loader)."""
    problems = []
    code = _run(["objdump", "-d", "--no-show-raw-insn", str(path)], timeout=60)
    if not code.strip():
        problems.append("could not be disassembled for the instruction audit (is objdump installed?)")
    found = sorted(set(_FORBIDDEN_INSN.findall(code)))
    if found:
        problems.append(f"contains forbidden instructions: {', '.join(found)} (system calls and timer reads "
                        "are not a kernel's business)")
    headers = _run(["readelf", "-W", "-l", "-r", "--dyn-syms", str(path)])
    stack = re.search(r"^\s*GNU_STACK\s+(?:\S+\s+){5}(.+?)\s+0x[0-9a-f]+\s*$", headers, re.M)
    if stack is None or "E" in stack.group(1):
        problems.append("asks for an executable stack")
    for m in re.finditer(r"^\s*LOAD\s+(?:\S+\s+){5}(.+?)\s+0x[0-9a-f]+\s*$", headers, re.M):
        if "W" in m.group(1) and "E" in m.group(1):
            problems.append("has a segment that is both writable and executable")
            break
    if re.search(r"\bIFUNC\b|R_X86_64_IRELATIVE|R_AARCH64_IRELATIVE", headers):
        problems.append("runs code when loaded (it defines an indirect function, whose resolver runs in the loader)")
    return problems


def _symbols(path: Path, which: str) -> set[str]:
    out = _run(["nm", "-D", which, "--format=posix", str(path)])
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if parts:
            names.add(parts[0].split("@")[0])
    return names


def _section_sizes(path: Path) -> dict:
    sizes = {}
    for line in _run(["readelf", "-S", "-W", str(path)]).splitlines():
        m = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+[0-9a-f]+\s+[0-9a-f]+\s+([0-9a-f]+)", line)
        if m:
            sizes[m.group(1)] = int(m.group(2), 16)
    return sizes


@functools.lru_cache(maxsize=4)
def _baseline_sections(flags: tuple) -> dict:
    """Section sizes of an empty kernel built the same way: what the toolchain adds itself."""
    with tempfile.TemporaryDirectory(prefix="int21-cc-") as tmp:
        (Path(tmp) / "k.c").write_text("void kernel(void) {}\n")
        subprocess.run([CC, *flags, "-o", "k.so", "k.c", "-lm"], cwd=tmp, capture_output=True, timeout=60)
        return _section_sizes(Path(tmp) / "k.so") if (Path(tmp) / "k.so").exists() else {}
