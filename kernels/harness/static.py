"""Static checks: the cheapest stage. Refuse source that asks for things a kernel never needs.

The checks run on the source as the compiler's preprocessor will see it (line splices
joined, digraphs and trigraphs folded, comments removed), so ``#inc\\<newline>lude`` or
``%:include`` cannot slip past. They are a first line, not the only one: the symbol audit
and the sandbox catch what a clever spelling hides from a regex.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

MAX_SOURCE_BYTES = 256 * 1024

C_HEADERS = {
    "math.h", "stdint.h", "stddef.h", "string.h", "float.h", "limits.h", "stdbool.h",
    "stdlib.h", "omp.h", "immintrin.h", "x86intrin.h", "emmintrin.h", "xmmintrin.h",
    "pmmintrin.h", "tmmintrin.h", "smmintrin.h", "nmmintrin.h", "arm_neon.h", "stdalign.h",
    "int21/simd.h",  # the harness's own vector helpers (kernels/harness/include)
}
CUDA_HEADERS = {
    "cuda_fp16.h", "cuda_bf16.h", "cuda_runtime.h", "stdint.h", "cstdint", "math_constants.h",
    "cooperative_groups.h", "cuda/pipeline", "cuda/barrier", "mma.h", "cuda_pipeline.h",
    "cuda/std/cstdint", "float.h", "cfloat", "limits.h", "climits",
}

# (pattern, why) — matched on cleaned source, word-bounded; functions only where called
# (``name(``), so a variable called ``time`` is fine. Taking a forbidden function's
# address without calling it is left to the symbol audit, which sees every import.
_COMMON_FORBIDDEN = [
    (r"fork|vfork|execl|execlp|execle|execv|execvp|execvpe|execve|system|popen|posix_spawn\w*|clone\d?",
     "starts processes"),
    (r"pthread_\w+|thrd_create|std\s*::\s*thread|std\s*::\s*async", "creates threads outside OpenMP"),
    (r"fopen|freopen|fdopen|open|openat|creat|fwrite|fread|fprintf|fputs|fputc|puts|putchar|"
     r"printf|vprintf|sprintf|snprintf|write|read|pread|pwrite|unlink|remove|rename|mkdir|"
     r"rmdir|fsync|mmap|munmap|mprotect|ioctl|dup2?|pipe|chdir|chmod|chown|truncate|ftruncate",
     "does file or terminal I/O"),
    (r"socket|connect|bind|listen|accept|send|sendto|recv|recvfrom|getaddrinfo|gethostbyname",
     "uses the network"),
    (r"dlopen|dlsym|dlmopen|dlvsym", "loads code dynamically"),
    (r"syscall|ptrace|prctl|setrlimit|getrlimit|kill|signal|sigaction|raise|setjmp|longjmp|"
     r"getenv|setenv|putenv|getpid|getppid|sleep|usleep|nanosleep",
     "talks to the operating system"),
    (r"environ", "reads the environment"),
    (r"clock|clock_gettime|gettimeofday|time|times|rdtsc|__rdtsc|_rdtsc|__rdtscp|rdtscp|"
     r"__builtin_ia32_rdtsc\w*|__builtin_readcyclecounter|omp_get_wtime|omp_get_wtick|"
     r"clock64|__nanosleep",
     "reads a timer (timing is the harness's job)"),
    (r"globaltimer|%clock\w*", "reads a hardware timer register"),
    (r"constructor|destructor|init_priority|section|ifunc|alias|weakref|visibility|symver",
     "changes how the binary is loaded or linked"),
    (r"__builtin_frame_address|__builtin_return_address|__builtin_extract_return_addr",
     "inspects the call stack"),
]
_CALLED = {"starts processes", "does file or terminal I/O", "uses the network",
           "loads code dynamically", "talks to the operating system",
           "reads a timer (timing is the harness's job)",
           "manages device memory or launches work itself"}
_C_ONLY = [
    (r"asm|__asm__|__asm", "contains inline assembly"),
]
_CUDA_ONLY = [
    (r"cudaMalloc\w*|cudaMemcpy\w*|cudaStream\w*|cudaEvent\w*|cudaLaunch\w*|cudaDeviceSynchronize|"
     r"cudaGraph\w*|cudaFree\w*|malloc|free", "manages device memory or launches work itself"),
]


@dataclass(frozen=True)
class StaticFinding:
    line: int
    rule: str
    text: str

    def sentence(self) -> str:
        return f"line {self.line}: {self.text} ({self.rule})"


def clean_source(source: str) -> str:
    """The text the preprocessor sees, with comments blanked (line numbers kept)."""
    s = source.replace("\r\n", "\n").replace("\r", "\n")
    trigraphs = {"??=": "#", "??/": "\\", "??'": "^", "??(": "[", "??)": "]", "??!": "|",
                 "??<": "{", "??>": "}", "??-": "~"}
    for k, v in trigraphs.items():
        s = s.replace(k, v)
    s = s.replace("%:", "#").replace("<:", "[").replace(":>", "]").replace("<%", "{").replace("%>", "}")
    # Join line splices but keep a newline count so findings point at real lines.
    out, pending = [], 0
    for line in s.split("\n"):
        if line.endswith("\\"):
            out.append(line[:-1])
            pending += 1
            continue
        out.append(line + "\n" * (pending + 1))
        pending = 0
    s = "".join(out)
    # Strip comments and string/char literals' contents (keep quotes so includes still parse).
    result, i, n = [], 0, len(s)
    while i < n:
        c = s[i]
        if s.startswith("//", i):
            j = s.find("\n", i)
            i = n if j < 0 else j
        elif s.startswith("/*", i):
            j = s.find("*/", i + 2)
            chunk = s[i:(n if j < 0 else j + 2)]
            result.append("\n" * chunk.count("\n") + " ")
            i = n if j < 0 else j + 2
        else:
            result.append(c)
            i += 1
    return "".join(result)


_INCLUDE = re.compile(r"^\s*#\s*(include|include_next|import|embed)\b(.*)$", re.M)
_ANGLE = re.compile(r"^\s*<([A-Za-z0-9_./]+)>\s*$")


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def check_source(source: str, language: str, entry: str = "kernel") -> list[StaticFinding]:
    """Every reason to refuse ``source`` (empty: it may be compiled). ``language``: c | cuda."""
    findings: list[StaticFinding] = []
    if len(source.encode("utf-8", "replace")) > MAX_SOURCE_BYTES:
        return [StaticFinding(1, "size", f"source is larger than {MAX_SOURCE_BYTES // 1024} KiB")]
    if "\x00" in source:
        return [StaticFinding(1, "encoding", "source contains NUL bytes")]
    text = clean_source(source)
    allowed = C_HEADERS if language == "c" else CUDA_HEADERS
    for m in _INCLUDE.finditer(text):
        line = _line_of(text, m.start())
        directive, arg = m.group(1), m.group(2)
        angle = _ANGLE.match(arg)
        if directive != "include" or not angle:
            findings.append(StaticFinding(line, "include",
                                          f"#{directive}{arg.rstrip()} is not allowed: only <header> "
                                          "includes of system/toolkit headers"))
        elif angle.group(1) not in allowed:
            findings.append(StaticFinding(line, "include",
                                          f"#include <{angle.group(1)}> is not on the header allowlist"))
    if re.search(r"__has_include|__has_include_next|\.incbin|_Pragma\s*\(\s*\"\s*(GCC|clang)\s+(push_options|"
                 r"target|optimize)", text):
        m = re.search(r"__has_include\w*|\.incbin|_Pragma", text)
        findings.append(StaticFinding(_line_of(text, m.start()), "include",
                                      f"{m.group(0)} is not allowed"))
    for m in re.finditer(r"^\s*#\s*pragma\s+(\w+)(.*)$", text, re.M):
        if m.group(1) not in ("omp", "unroll", "GCC", "nv_diag_suppress", "nv_diag_default"):
            findings.append(StaticFinding(_line_of(text, m.start()), "pragma",
                                          f"#pragma {m.group(1)} is not allowed"))
        elif m.group(1) == "GCC" and not re.match(r"\s*(unroll|ivdep)\b", m.group(2)):
            findings.append(StaticFinding(_line_of(text, m.start()), "pragma",
                                          "only '#pragma GCC unroll/ivdep' are allowed"))
    rules = _COMMON_FORBIDDEN + (_C_ONLY if language == "c" else _CUDA_ONLY)
    for pattern, why in rules:
        tail = r"(?=\s*\()" if why in _CALLED else ""
        for m in re.finditer(rf"(?<![\w$])({pattern})(?![\w$]){tail}", text):
            findings.append(StaticFinding(_line_of(text, m.start()), why, f"'{m.group(1)}'"))
    entry_re = (rf"\bvoid\s+{entry}\s*\(" if language == "c"
                else rf"extern\s+\"C\"\s+__global__\s+(__launch_bounds__\s*\([^)]*\)\s*)?void\s+{entry}\s*\(")
    if not re.search(entry_re, text):
        want = f"void {entry}(...)" if language == "c" else f'extern "C" __global__ void {entry}(...)'
        findings.append(StaticFinding(1, "entry point", f"no definition of {want}"))
    findings.sort(key=lambda f: f.line)
    return findings
