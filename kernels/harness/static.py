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
    "int21/simd.h", "int21/vec.h",  # the harness's own vector helpers (kernels/harness/include)
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


def join_splices(source: str) -> str:
    """Translation phases 1-2 as the compiler runs them: newlines normalised, trigraphs
    folded (conservatively), backslash-newline splices joined, newline count kept so
    findings point at real lines."""
    s = source.replace("\r\n", "\n").replace("\r", "\n")
    # gnu11 ignores trigraphs; folding the others only shows more. "??/" is left alone: as
    # "\\" it would invent a splice the compiler never makes ("// ...??/" would swallow the
    # next line, an #include, from the checks while the compiler still includes the file).
    trigraphs = {"??=": "#", "??'": "^", "??(": "[", "??)": "]", "??!": "|",
                 "??<": "{", "??>": "}", "??-": "~"}
    for k, v in trigraphs.items():
        s = s.replace(k, v)
    # GCC splices a backslash followed by spaces/tabs and then the newline, too.
    out, pending = [], 0
    for line in s.split("\n"):
        m = re.search(r"\\[ \t\f\v]*$", line)
        if m:
            out.append(line[:m.start()])
            pending += 1
            continue
        out.append(line + "\n" * (pending + 1))
        pending = 0
    return "".join(out)


def clean_source(source: str) -> str:
    """The text the preprocessor sees, with comments blanked (line numbers kept)."""
    s = join_splices(source)
    # Digraphs are tokens, formed after splicing ("%\\<newline>:include" is a directive).
    s = s.replace("%:", "#").replace("<:", "[").replace(":>", "]").replace("<%", "{").replace("%>", "}")
    # Strip comments. String and character literals are copied through untouched, so a "/*"
    # or "//" inside one cannot blank the lines after it (and hide an #include) from the checks.
    result, i, n = [], 0, len(s)
    while i < n:
        c = s[i]
        if c in "\"'":
            j = i + 1
            while j < n and s[j] not in (c, "\n"):
                j += 2 if s[j] == "\\" else 1
            j = min(j + 1, n) if j < n and s[j] == c else j
            result.append(s[i:j])
            i = j
        elif s.startswith("//", i):
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
    # Raw string literals (a GNU extension in gnu11) undo line splices inside them and may
    # hold quotes and comment markers across lines: no kernel needs one, so refuse them
    # rather than second-guess where they end (on the spliced text, comments included).
    for m in re.finditer(r'(?<![\w$])(?:u8|u|U|L)?R"', join_splices(source)):
        findings.append(StaticFinding(_line_of(join_splices(source), m.start()), "raw string",
                                      "raw string literals (R\"...\") are not allowed"))
        break
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
    pragmas = [(m.start(), m.group(1), m.group(2)) for m in re.finditer(r"^\s*#\s*pragma\s+(\w+)(.*)$", text, re.M)]
    # _Pragma("...") is a #pragma too: hold its (destringized) text to the same rules.
    for m in re.finditer(r"(?<![\w$])_Pragma\s*\(\s*(?:L|u8|u|U)?\"((?:[^\"\\\n]|\\.)*)\"\s*\)", text):
        body = re.sub(r"\\(.)", r"\1", m.group(1))
        word = re.match(r"\s*(\w*)(.*)$", body, re.S)
        pragmas.append((m.start(), word.group(1), word.group(2)))
    for start, name, rest in pragmas:
        if name not in ("omp", "unroll", "GCC", "nv_diag_suppress", "nv_diag_default"):
            findings.append(StaticFinding(_line_of(text, start), "pragma",
                                          f"#pragma {name} is not allowed"))
        elif name == "GCC" and not re.match(r"\s*(unroll|ivdep)\b", rest):
            findings.append(StaticFinding(_line_of(text, start), "pragma",
                                          "only '#pragma GCC unroll/ivdep' are allowed"))
    rules = _COMMON_FORBIDDEN + (_C_ONLY if language == "c" else _CUDA_ONLY)
    for pattern, why in rules:
        tail = r"(?=\s*\()" if why in _CALLED else ""
        for m in re.finditer(rf"(?<![\w$])({pattern})(?![\w$]){tail}", text):
            findings.append(StaticFinding(_line_of(text, m.start()), why, f"'{m.group(1)}'"))
    bounds = r"(?:__launch_bounds__\s*\((?:[^()]|\([^()]*\))*\)\s*)?"
    entry_re = (rf"\bvoid\s+{entry}\s*\(" if language == "c"
                else rf"extern\s+\"C\"\s+__global__\s+{bounds}void\s+{bounds}{entry}\s*\(")
    if not re.search(entry_re, text):
        want = f"void {entry}(...)" if language == "c" else f'extern "C" __global__ void {entry}(...)'
        findings.append(StaticFinding(1, "entry point", f"no definition of {want}"))
    findings.sort(key=lambda f: f.line)
    return findings
