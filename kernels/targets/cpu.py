"""CPU target: C11 + OpenMP through the system C compiler into an object file, audited, then
linked into the trusted runner (``kernels/harness/runner.c``): the only process that ever
executes it. Builds are cached by source + params + flags + compiler version.
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
import time
from pathlib import Path

from kernels.harness.sandbox import Limits, minimal_env, run_process
from kernels.targets.base import Artifact, AuditResult, CompileFailure, cache_dir, param_prelude

CC = os.environ.get("INT21_CC", "gcc")
INCLUDE_DIR = Path(__file__).resolve().parents[1] / "harness" / "include"
BASE_FLAGS = [f"-I{INCLUDE_DIR}", "-std=gnu11", "-O3", "-march=native", "-fopenmp", "-fPIE", "-fno-ident",
              "-Wall", "-Wno-unused-function", "-Wno-unknown-pragmas",
              "-Werror=implicit-function-declaration", "-Werror=implicit-int",
              "-Werror=incompatible-pointer-types", "-Werror=return-type", "-Werror=int-conversion"]
# The same, for a shared object loaded in-process (approved code: kernels/native.py; the
# generator's own probe forms: kernels/codegen/gemm_form.py).
SHARED_FLAGS = [f for f in BASE_FLAGS if f != "-fPIE"] + ["-fPIC", "-shared"]

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
    r"ancestor_thread_num|dynamic|nested)|omp_in_parallel|"
    r"memcpy|memmove|memset|memcmp|__memcpy_chk|__memmove_chk|__memset_chk|"
    r"malloc|calloc|realloc|free|aligned_alloc|posix_memalign|"
    r"abort|exit|_exit|__assert_fail|__stack_chk_fail|__cxa_finalize|__gmon_start__|_GLOBAL_OFFSET_TABLE_|"
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
    min_timed_calls = 0          # the CPU's timer is the evaluator's clock: no floor beyond the goal's
    timer = "wall"

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
        """Source → an object file (``kernel.o``), cached. Three sandboxed steps, run as an
        unprivileged user of their own: preprocess (and check what the candidate's own lines
        expanded to, pragmas from ``_Pragma`` included), compile the checked text to assembly
        (refused if any assembly came from the source), assemble."""
        flags = self.flags(options)
        text = param_prelude(params) + source
        key = hashlib.sha256("\0".join([text, " ".join(flags), compiler_version(), include_digest(),
                                         "object-v2"]).encode()).hexdigest()[:32]
        out_dir = cache_dir() / "cpu"
        out_dir.mkdir(parents=True, exist_ok=True)
        artifact = out_dir / f"{key}.o"
        if artifact.exists():
            log_path = artifact.with_suffix(".log")
            return Artifact(artifact, 0.0, log_path.read_text() if log_path.exists() else "", cached=True)
        start = time.monotonic()
        from kernels.harness.box import Box
        box = Box()
        try:
            tmp = box.home
            (tmp / "kernel.c").write_text(text)
            if box.root_user:
                os.chown(tmp / "kernel.c", box.uid, box.gid)
            limits = Limits(wall_seconds=options.get("compile_timeout", 120), cpu_seconds=300,
                            memory_mb=4096, file_mb=256)
            run = functools.partial(run_process, cwd=tmp, limits=limits, env=minimal_env({"TMPDIR": str(tmp)}),
                                    user=box.uid if box.root_user else None,
                                    group=box.gid if box.root_user else None)
            result = run([CC, *flags, "-E", "-o", "kernel.i", "kernel.c"])
            log = result.stdout + result.stderr
            if result.returncode != 0 and "dependency" in log:
                # A "GCC dependency" pragma built by macros probes the compile host's files: the
                # same answer whether the file exists or not, and no compiler log to read it from.
                return CompileFailure("a '#pragma GCC dependency' (it probes the compile host's files) is not "
                                      "allowed", "", seconds=time.monotonic() - start, refused=True)
            if result.returncode == 0 and not result.timed_out:
                from kernels.harness.static import check_preprocessed
                findings = check_preprocessed((tmp / "kernel.i").read_text(errors="replace"), "c")
                if findings:
                    return CompileFailure(f"after preprocessing, {findings[0].sentence()}", "",
                                          seconds=time.monotonic() - start, refused=True)
                result = run([CC, *flags, "-S", "-o", "kernel.s", "kernel.i"])
                log = result.stdout + result.stderr
            # In between, assembly that came from the source (inline or top-level asm, however its
            # keyword was spelled) is refused before the assembler ever runs (.incbin would read
            # host files).
            if result.returncode == 0 and not result.timed_out:
                if "#APP" in (tmp / "kernel.s").read_text(errors="replace"):
                    return CompileFailure("the source contains assembly after preprocessing (inline or "
                                          "top-level asm is not allowed)", "", seconds=time.monotonic() - start,
                                          refused=True)
                result = run([CC, *flags, "-c", "-o", "kernel.o", "kernel.s"])
                log += result.stdout + result.stderr
            seconds = time.monotonic() - start
            log = log[-20000:]
            if result.timed_out:
                return CompileFailure(f"compilation ran past its {limits.wall_seconds:g} s limit",
                                      log, timed_out=True, seconds=seconds)
            if result.returncode != 0 or not (tmp / "kernel.o").exists():
                first = next((ln for ln in log.splitlines() if "error" in ln), log.strip()[:200])
                return CompileFailure(f"the compiler rejected the source: {first.strip()}", log, seconds=seconds)
            tmp_art = out_dir / f".{key}.{os.getpid()}.tmp"
            shutil.copyfile(tmp / "kernel.o", tmp_art)
            os.replace(tmp_art, artifact)
            artifact.with_suffix(".log").write_text(log)
        finally:
            box.close()
        return Artifact(artifact, seconds, log)

    # ------------------------------------------------------------------ audit

    def audit(self, artifact: Artifact, options: dict) -> AuditResult:
        """The object, before it is linked into anything: every symbol it imports on the
        allowlist, its entry point defined, no code that runs at load (init/fini sections,
        constructors, indirect functions), no executable stack, no forbidden instructions."""
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
        sections = _sections(artifact.path)
        details["sections"] = {name: size for name, (_, size, _) in sections.items()}
        for name, (kind, size, flags) in sections.items():
            if (any(name == p or name.startswith(p + ".") for p in _LOAD_SECTIONS)
                    or kind in ("INIT_ARRAY", "FINI_ARRAY", "PREINIT_ARRAY")):
                problems.append(f"runs code when loaded or unloaded (it has a {name} section)")
            elif "X" in flags and not (name == ".text" or name.startswith(".text.") or name == ".note.GNU-stack"):
                problems.append(f"puts code in a section of its own ({name}), outside .text")
        stack = sections.get(".note.GNU-stack")
        if stack is None or "X" in stack[2]:
            problems.append("asks for an executable stack")
        details["text_bytes"] = sum(size for name, (_, size, _) in sections.items()
                                    if name == ".text" or name.startswith(".text."))
        problems += _code_problems(artifact.path)
        problems = list(dict.fromkeys(problems))
        return AuditResult(not problems, problems, details)

    # ------------------------------------------------------------------ runner

    def prepare(self, artifact: Artifact, workload, options: dict):
        """The audited object linked into the trusted runner: the executable that runs it."""
        from kernels.harness.runner import link
        return link(artifact.path, workload.args, entry=options.get("entry", "kernel"))

    def start(self, runnable, *, inputs, outputs, box, settings, workload, params):
        """The candidate's process for one phase: the runner executable, isolated and stopped."""
        from kernels.harness.process import RunnerProcess
        return RunnerProcess(runnable, inputs=inputs, outputs=outputs, box=box, wall_seconds=settings.run_timeout,
                             memory_mb=settings.memory_mb, cpu_seconds=int(settings.run_timeout * 4) + 10)

    def call_tokens(self, wl, shape, scalars, *, inputs: dict, outputs: dict, params: dict) -> str:
        """One call's arguments for the runner: buffer offsets, dims, float32 scalars' bits."""
        tokens = []
        for a in wl.args:
            if a.kind == "in":
                tokens.append(f"i{inputs[a.name]:x}")
            elif a.kind == "out":
                tokens.append(f"o{outputs[a.name]:x}")
            elif a.kind == "dim":
                tokens.append(f"d{int(shape[a.name])}")
            else:
                tokens.append(f"f{struct.unpack('<I', struct.pack('<f', float(scalars[a.name])))[0]:x}")
        return " ".join(tokens)

    def call_problems(self, reply, proc, *, inputs, outputs, threads_declared) -> list[tuple[str, str]]:
        """What the kernel left changed for its caller (the runner's report after the call)."""
        from kernels.harness.verdicts import state_problems
        return [("suspicious", p) for p in state_problems(reply, proc, threads_declared=threads_declared)]

    def ceilings(self, refresh: bool = False) -> dict:
        from kernels.harness.roofline import cpu_ceilings
        return cpu_ceilings(self.fingerprint(), refresh=refresh)


_LOAD_SECTIONS = (".init", ".fini", ".init_array", ".fini_array", ".preinit_array", ".ctors", ".dtors")

# Instructions a kernel never needs. Inline asm is refused by the static check, but the asm
# keyword and __builtin_ia32_rdtsc can be spelled by token pasting, so look at the code. The
# FP-environment loads (ldmxcsr, fldcw, …) would change the caller's rounding or denormals.
_FORBIDDEN_INSN = re.compile(r"^\s*[0-9a-f]+:\s+(syscall|sysenter|int|int3|rdtscp?|rdpmc|v?ldmxcsr|fldcw|fldenv|"
                             r"frstor|fxrstor64|fxrstor|xrstors?|wrpkru|wrfsbase|wrgsbase)\b", re.M)


def _code_problems(path: Path) -> list[str]:
    """What the symbol audit cannot see: system calls, timer reads and FP-environment loads in
    the machine code, and indirect functions (their resolvers run inside the loader)."""
    problems = []
    code = _run(["objdump", "-d", "--no-show-raw-insn", str(path)], timeout=60)
    if not code.strip():
        problems.append("could not be disassembled for the instruction audit (is objdump installed?)")
    found = sorted(set(_FORBIDDEN_INSN.findall(code)))
    if found:
        problems.append(f"contains forbidden instructions: {', '.join(found)} (system calls, timer reads and "
                        "changes to the floating-point environment are not a kernel's business)")
    symbols = _run(["readelf", "-W", "-s", "-r", str(path)])
    if re.search(r"\bIFUNC\b|R_X86_64_IRELATIVE|R_AARCH64_IRELATIVE", symbols):
        problems.append("runs code when loaded (it defines an indirect function, whose resolver runs in the loader)")
    return problems


def _symbols(path: Path, which: str) -> set[str]:
    """Global symbols of an object file, undefined (imports) or defined (exports)."""
    out = _run(["nm", "--extern-only", which, "--format=posix", str(path)])
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if parts:
            names.add(parts[0].split("@")[0])
    return names


def _sections(path: Path) -> dict:
    """name → (type, size, flags) of every section of an object file."""
    out = {}
    for line in _run(["readelf", "-S", "-W", str(path)]).splitlines():
        m = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+(\S+)\s+[0-9a-f]+\s+[0-9a-f]+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([A-Za-z]*)",
                     line)
        if m:
            out[m.group(1)] = (m.group(2), int(m.group(3), 16), m.group(4))
    return out
