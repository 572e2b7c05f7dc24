"""Static checks for PTX candidates (``language == "ptx"``): the PTX counterpart of the C/CUDA
rules in :mod:`kernels.harness.static`, which calls :func:`check_ptx`.

A PTX candidate is one module with exactly one ``.entry kernel``; it may define its own
``.func`` helpers, ``.shared`` memory (``.extern .shared`` for the dynamic part) and
initialised ``.const`` tables. It may not reach outside itself: no external functions or
variables, no calls to the device runtime (``vprintf``, ``malloc``, ``__assertfail``), no
traps or breakpoints, no timers or performance counters, no module ``.global`` variables
(memory that outlives a launch), no fixed addresses, no debug directives naming host files.
The cubin audit (imports, resources) and the sandbox are the next lines: these checks are
the cheap first one. They run on the template source and again on the expanded text
(:mod:`kernels.targets.ptx`), so a placeholder cannot assemble what the first pass refused.
"""
from __future__ import annotations

import re

from kernels.harness.static import MAX_SOURCE_BYTES, StaticFinding, strip_comments

# Functions a PTX module may declare .extern and call (resolved by the driver). None: the
# seeds need no device runtime, and the audit holds the cubin's imports to the same list.
ALLOWED_EXTERN_FUNCS: frozenset[str] = frozenset()
RUNTIME_CALLS = {"vprintf", "printf", "malloc", "free", "__assertfail", "__assert_fail",
                 "cudaMalloc", "cudaFree", "cudaLaunchDevice", "cudaGetParameterBuffer"}
_ID = r"[A-Za-z_$%][\w$]*"
_STMT = r"(?:^|(?<=[;{}]))\s*"           # the start of a statement
_LINKAGE = r"(?:\.(?:visible|extern|weak|common)\s+)*"

_RULES = [
    (r"(?<![\w$%.])(trap|brkpt|pmevent)(?![\w$])", "stops or signals the GPU (trap, brkpt, pmevent)"),
    (r"(?<![\w$%.])(nanosleep)(?![\w$])", "sleeps (a kernel has nothing to wait for)"),
    (r"(%globaltimer\w*|%clock\w*)(?![\w$])", "reads a hardware timer register (timing is the harness's job)"),
    (r"(%pm\d\w*)(?![\w$])", "reads a performance-monitor counter"),
    (r"(%envreg\d+)(?![\w$])", "reads the driver's environment registers"),
    (r"(?<![\w$])(\.(?:file|loc|section|weak|common|alias)|@@DWARF)(?![\w$])",
     "uses a debug or linkage directive (.file/.loc/.section name host files; .weak/.common/.alias relink)"),
    (r"(\.(?:texref|surfref|samplerref))(?![\w$])", "uses a texture or surface bound by host code"),
    (r"(?m)^\s*(#\s*\w*)", "uses a preprocessor line (ptxas has none: the template step's @if/@define)"),
]


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def check_ptx(source: str, entry: str = "kernel") -> list[StaticFinding]:
    """Every reason to refuse the PTX ``source`` (empty: it may be assembled)."""
    if len(source.encode("utf-8", "replace")) > MAX_SOURCE_BYTES:
        return [StaticFinding(1, "size", f"source is larger than {MAX_SOURCE_BYTES // 1024} KiB")]
    bad = re.search(r"[^\t\n\r\x20-\x7e]", source)
    if bad:
        return [StaticFinding(_line(source, bad.start()), "encoding",
                              f"PTX must be printable ASCII (found {bad.group(0)!r})")]
    text = strip_comments(source, quotes='"')   # PTX quotes only in .file/.pragma
    findings: list[StaticFinding] = []

    def add(pos: int, rule: str, what: str) -> None:
        findings.append(StaticFinding(_line(text, pos), rule, what))

    entries = list(re.finditer(rf"\.entry\s+({_ID})", text))
    if not entries:
        add(0, "entry point", f"no '.entry {entry}' (the kernel's entry point)")
    for m in entries:
        if m.group(1) != entry:
            add(m.start(), "entry point", f"'.entry {m.group(1)}': the entry point must be named '{entry}'")
    if len(entries) > 1:
        add(entries[1].start(), "entry point", f"{len(entries)} .entry directives: exactly one, '{entry}'")

    for m in re.finditer(r"\.extern\b([^;{]*)", text):
        decl = m.group(1)
        space = re.search(r"\.(func|global|const|local|param|shared)\b", decl)
        if space is None or space.group(1) == "shared":
            continue                      # .extern .shared: dynamic shared memory, sized by the launch
        if space.group(1) == "func":
            rest = re.sub(r"^\s*\([^)]*\)", "", decl[space.end():])       # the return parameters
            name = re.match(rf"\s*({_ID})", rest)
        else:
            name = re.search(rf"({_ID})\s*(?:\[[^\]]*\]\s*)*$", decl.strip())
        name = name.group(1) if name else "?"
        if space.group(1) == "func" and name in ALLOWED_EXTERN_FUNCS:
            continue
        kind = "function" if space.group(1) == "func" else f".{space.group(1)} variable"
        add(m.start(), "extern", f"declares an external {kind} '{name}' (a kernel uses only what it "
                                 "defines and its parameters)")
    for m in re.finditer(rf"{_STMT}{_LINKAGE}\.global\b[^;]*?({_ID})\s*(?=[\[;=])", text, re.M):
        if not re.match(r"\s*(?:\.\w+\s+)*\.extern", m.group(0)):
            add(m.start(), "global variable",
                f"declares the .global variable '{m.group(1)}' (device memory that outlives a launch: a kernel "
                "works on its parameters only)")
    for m in re.finditer(rf"{_STMT}{_LINKAGE}\.const\b[^;]*;", text, re.M):
        if "=" not in m.group(0) and ".extern" not in m.group(0):
            name = re.search(rf"({_ID})\s*(?:\[[^\]]*\]\s*)*;", m.group(0))
            add(m.start(), "constant", f"declares the .const variable '{name.group(1) if name else '?'}' without "
                                       "an initializer: it would hold something other than the kernel's inputs")

    defined = set(re.findall(rf"\.func\s+(?:\([^)]*\)\s*)?({_ID})", text))
    for m in re.finditer(rf"(?<![\w$.])call(?:\.\w+)*\s+(?:\([^)]*\)\s*,\s*)?({_ID})", text):
        target = m.group(1)
        if target in RUNTIME_CALLS:
            add(m.start(), "system call", f"calls '{target}' (no printf, malloc/free or assertions on the device)")
        elif target.startswith("%"):
            add(m.start(), "indirect call", f"calls through the register {target} (only named functions)")
        elif target not in defined:
            add(m.start(), "call", f"calls '{target}', which this module does not define")
    for m in re.finditer(r"\.pragma\s+\"([^\"]*)\"", text):
        if m.group(1).strip() != "nounroll":
            add(m.start(), "pragma", f".pragma \"{m.group(1)}\" is not allowed (only \"nounroll\")")
    for m in re.finditer(r"\[\s*(?:0[xX][0-9a-fA-F]+|\d+)\s*(?:\+\s*-?\d+\s*)?\]", text):
        before = text[:m.start()].rstrip()[-1:]
        if not (before.isalnum() or before in "_$]"):      # not an array's size: an address
            add(m.start(), "fixed address", f"'{m.group(0)}' addresses a fixed memory location")
    for pattern, why in _RULES:
        for m in re.finditer(pattern, text):
            add(m.start(), why, f"'{m.group(1).strip()}'")
    findings.sort(key=lambda f: f.line)
    return findings
