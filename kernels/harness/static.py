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
# the most any workload may allow (a generated whole-model engine: a few MiB of C)
MAX_GENERATED_BYTES = 16 * 1024 * 1024

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
    # Attribute names may be spelled with double underscores (__section__): both forms.
    (r"(?:__)?(?:constructor|destructor|init_priority|section|ifunc|alias|weakref|visibility|symver)(?:__)?",
     "changes how the binary is loaded or linked"),
    (r"__builtin_frame_address|__builtin_return_address|__builtin_extract_return_addr|__builtin_frob_return_addr|"
     r"__builtin_dwarf_cfa|__builtin_apply|__builtin_apply_args|__builtin_return|__builtin_eh_return|"
     r"__builtin_unwind_init|__builtin_stack_save|__builtin_stack_restore",
     "inspects the call stack"),
    (r"__builtin_longjmp|__builtin_setjmp|_setjmp|_longjmp|sigsetjmp|siglongjmp|__sigsetjmp",
     "jumps out of a function (a kernel returns to its caller)"),
    (r"_mm_setcsr|_mm_getcsr|__builtin_ia32_ldmxcsr|__builtin_ia32_stmxcsr|_MM_SET_\w+|fesetround|fesetenv|"
     r"feholdexcept|fesetexceptflag|feupdateenv|fedisableexcept|feenableexcept",
     "changes the floating-point environment (rounding, flush-to-zero) its caller runs in"),
    (r"omp_set_num_threads|omp_set_dynamic|omp_set_nested|omp_set_max_active_levels|omp_set_schedule",
     "changes its caller's OpenMP settings (use a num_threads clause)"),
]
_CALLED = {"starts processes", "does file or terminal I/O", "uses the network",
           "loads code dynamically", "talks to the operating system",
           "reads a timer (timing is the harness's job)",
           "manages device memory or launches work itself"}
_TEXT_ONLY = {"inspects the call stack", "jumps out of a function (a kernel returns to its caller)",
              "changes the floating-point environment (rounding, flush-to-zero) its caller runs in",
              "changes its caller's OpenMP settings (use a num_threads clause)"}

# Attributes refused wherever they appear in an attribute list (``__attribute__((...))`` or
# ``[[...]]``), in either spelling (``used`` / ``__used__``); as ordinary words they are fine.
_ATTRIBUTES = {
    # What the binary cannot show the audit: flags changed for one function, or a body of asm.
    # Load-time attributes (constructor, section, ifunc…) are refused above by name and, however
    # they were spelled, by the audit of the object's sections and symbols.
    "optimize": "changes the compiler's flags (the harness fixes them)",
    "naked": "contains inline assembly",
}


def _attribute_lists(text: str):
    """(start offset, body) of every __attribute__((...)) and [[...]] in cleaned source."""
    for m in re.finditer(r"(?<![\w$])(?:__attribute__|__attribute)\s*\(", text):
        depth, i = 0, m.end() - 1
        while i < len(text):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            if depth == 0:
                break
            i += 1
        yield m.start(), text[m.end():i]
    for m in re.finditer(r"\[\[(.*?)\]\]", text, re.S):
        yield m.start(), m.group(1)


def _attribute_findings(text: str) -> list["StaticFinding"]:
    out = []
    for start, body in _attribute_lists(text):
        for word in re.findall(r"[A-Za-z_]\w*", body):
            name = word.strip("_")
            if ":" in body and word in ("gnu", "clang"):
                continue
            if name in _ATTRIBUTES:
                out.append(StaticFinding(_line_of(text, start), _ATTRIBUTES[name], f"attribute '{word}'"))
    return out


def _macro_findings(text: str) -> list["StaticFinding"]:
    """Stringizing (``#x``) turns tokens into the text of a pragma no check could read on the
    source (``_Pragma(STR(GCC dependency ...))``): refused in any #define. Without it, every
    pragma's text appears literally in the source, where the pragma rules see it; a string
    naming a "dependency" (the pragma that probes the compile host's files) is refused
    outright, and ``_Pragma`` must be given a string literal."""
    out = []
    for m in re.finditer(r"^[ \t]*#[ \t]*define[ \t]+[A-Za-z_]\w*(\([^)]*\))?(.*)$", text, re.M):
        body = re.sub(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'', "", m.group(2))
        if re.search(r"(?<!#)#(?!#)", body.replace("##", "")):
            out.append(StaticFinding(_line_of(text, m.start()), "macro",
                                     "stringizing (#) in a macro is not allowed: it builds pragma text the "
                                     "checks cannot see"))
    for m in re.finditer(r'"((?:[^"\\\n]|\\.)*)"', text):
        if re.search(r"\bdependency\b", m.group(1)):
            out.append(StaticFinding(_line_of(text, m.start()), "pragma",
                                     "'GCC dependency' is not allowed (it probes the compile host's files)"))
    for m in re.finditer(r"(?<![\w$])_Pragma\s*\(\s*(?![\s]*(?:L|u8|u|U)?\")", text):
        out.append(StaticFinding(_line_of(text, m.start()), "pragma",
                                 "_Pragma must be given a string literal"))
    return out
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
    return strip_comments(s)


def strip_comments(s: str, quotes: str = "\"'") -> str:
    """``//`` and ``/* */`` comments blanked (line numbers kept). String and character literals
    (``quotes``) are copied through untouched, so a "/*" or "//" inside one cannot blank the
    lines after it (and hide an #include) from the checks."""
    result, i, n = [], 0, len(s)
    special = re.compile("[/" + re.escape(quotes) + "]")   # plain text runs up to the next of these
    while i < n:
        m = special.search(s, i)
        if m is None:
            result.append(s[i:])
            break
        if m.start() > i:
            result.append(s[i:m.start()])
            i = m.start()
        c = s[i]
        if c in quotes:
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


def check_source(source: str, language: str, entry: str = "kernel", *,
                 max_bytes: int | None = None) -> list[StaticFinding]:
    """Every reason to refuse ``source`` (empty: it may be compiled). ``language``: c | cuda |
    ptx (PTX has rules of its own: :mod:`kernels.harness.static_ptx`). ``max_bytes``: a
    larger size limit the workload allows (never below MAX_SOURCE_BYTES, never above
    MAX_GENERATED_BYTES)."""
    if language == "ptx":
        from kernels.harness.static_ptx import check_ptx
        return check_ptx(source, entry)
    findings: list[StaticFinding] = []
    limit = min(max(MAX_SOURCE_BYTES, int(max_bytes or 0)), MAX_GENERATED_BYTES)
    if len(source.encode("utf-8", "replace")) > limit:
        return [StaticFinding(1, "size", f"source is larger than {limit // 1024} KiB")]
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
    if language in ("c", "cuda"):
        findings += _attribute_findings(text) + _macro_findings(text)
    findings = list({(f.line, f.rule): f for f in findings}.values())
    findings.sort(key=lambda f: f.line)
    return findings


def check_preprocessed(text: str, language: str = "c", filename: str = "kernel") -> list[StaticFinding]:
    """The same rules on the preprocessor's output (``cc -E``), on the candidate's own lines
    only (the line markers say whose they are: headers legitimately hold asm and attributes):
    whatever a macro expanded to, and every ``_Pragma`` as the ``#pragma`` it became."""
    own, line_no, mine = [], 1, True
    for raw in text.split("\n"):
        m = re.match(r'^#\s+(\d+)\s+"([^"]*)"', raw)
        if m:
            line_no, mine = int(m.group(1)), m.group(2) == filename
            continue
        if mine:
            own.append((line_no, raw))
            line_no += 1
    findings = []
    body = "\n".join(f"{t}" for _, t in own)
    lines = [n for n, _ in own]
    # Imports and instructions are the audit's (it sees the binary however the source spelled
    # them); here, what only the text can show: pragmas, attributes, and builtins that compile
    # to no import (stack inspection, long jumps, the FP environment, OpenMP state).
    for pattern, why in (r for r in _COMMON_FORBIDDEN if r[1] in _TEXT_ONLY):
        tail = r"(?=\s*\()" if why in _CALLED else ""
        for m in re.finditer(rf"(?<![\w$])({pattern})(?![\w$]){tail}", body):
            findings.append(StaticFinding(lines[body.count("\n", 0, m.start())], why, f"'{m.group(1)}'"))
    for m in re.finditer(r"^\s*#\s*pragma\s+(\w+)(.*)$", body, re.M):
        name, rest = m.group(1), m.group(2)
        ok = name in ("omp", "unroll", "nv_diag_suppress", "nv_diag_default") or (
            name == "GCC" and re.match(r"\s*(unroll|ivdep)\b", rest))
        if not ok:
            findings.append(StaticFinding(lines[body.count("\n", 0, m.start())], "pragma",
                                          f"#pragma {name}{rest.rstrip()} is not allowed"))
    for f in _attribute_findings(body):
        findings.append(StaticFinding(lines[min(f.line - 1, len(lines) - 1)] if lines else 1, f.rule, f.text))
    findings = list({(f.line, f.rule): f for f in findings}.values())
    findings.sort(key=lambda f: f.line)
    return findings
