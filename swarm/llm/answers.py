"""A model's answer as a kernel source, strictly: a whole kernel in one fenced code block,
or SEARCH/REPLACE edits that each match the parent exactly once inside its editable
regions. Anything else is ``Unusable`` with the reason (the raw answer is kept by the
caller). Nothing here runs the code: the result only ever goes to the harness.

Editable regions are marked in a kernel by comment lines containing ``INT21-EDIT-BEGIN``
and ``INT21-EDIT-END``; a kernel without markers is editable everywhere.
"""
from __future__ import annotations

import re

from kernels.spec import Workload

MAX_ANSWER = 200_000
MAX_SOURCE = 100_000
BEGIN, END = "INT21-EDIT-BEGIN", "INT21-EDIT-END"

_EDIT = re.compile(r"^<{5,9}[ \t]*SEARCH[ \t]*\n(.*?)^={5,9}[ \t]*\n(.*?)^>{5,9}[ \t]*REPLACE[ \t]*$", re.S | re.M)
_FENCE = re.compile(r"^```[ \t]*([\w+#.-]*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
CODE_LANGS = {"", "c", "cpp", "c++", "cc", "cuda", "cu", "h"}


class Unusable(ValueError):
    """The answer cannot become a candidate; ``str()`` says why in one sentence."""


def regions(source: str) -> list[tuple[int, int]]:
    """Character spans that may change: between marker lines, or the whole source."""
    spans, start = [], None
    pos = 0
    for line in source.splitlines(keepends=True):
        if BEGIN in line and start is None:
            start = pos + len(line)
        elif END in line and start is not None:
            spans.append((start, pos))
            start = None
        pos += len(line)
    if not spans or start is not None:
        return [(0, len(source))]
    return spans


def _outside(source: str) -> list[str]:
    """The fixed text of a marked kernel (whitespace-normalised), between the regions."""
    spans = regions(source)
    if spans == [(0, len(source))]:
        return []
    cuts, last = [], 0
    for a, b in spans:
        cuts.append(" ".join(source[last:a].split()))
        last = b
    cuts.append(" ".join(source[last:].split()))
    return cuts


def _find_unique(source: str, search: str) -> tuple[int, int]:
    """Where ``search`` occurs: exactly once, trailing whitespace on each line ignored."""
    if not search.strip():
        raise Unusable("a SEARCH block is empty")
    count = source.count(search)
    if count == 1:
        i = source.index(search)
        return i, i + len(search)
    if count > 1:
        raise Unusable(f"a SEARCH block matches {count} places in the kernel; include more lines to make it unique")
    lines = source.splitlines(keepends=True)
    want = [ln.rstrip() for ln in search.rstrip("\n").splitlines()]
    offsets = [0]
    for ln in lines:
        offsets.append(offsets[-1] + len(ln))
    hits = [i for i in range(len(lines) - len(want) + 1)
            if all(lines[i + j].rstrip() == want[j] for j in range(len(want)))]
    if len(hits) == 1:
        i = hits[0]
        return offsets[i], offsets[i + len(want)]
    if len(hits) > 1:
        raise Unusable(f"a SEARCH block matches {len(hits)} places in the kernel; include more lines to make it unique")
    first = want[0].strip()[:80] if want else ""
    raise Unusable(f"a SEARCH block does not match the kernel (it starts {first!r}); copy the lines exactly")


def apply_edits(parent: str, answer: str) -> str:
    blocks = _EDIT.findall(answer)
    opened = len(re.findall(r"^<{5,9}[ \t]*SEARCH", answer, re.M))
    if not blocks or len(blocks) != opened:
        raise Unusable("malformed SEARCH/REPLACE block (each needs <<<<<<< SEARCH, =======, >>>>>>> REPLACE lines)")
    source = parent
    for search, replace in blocks:
        a, b = _find_unique(source, search)
        if not any(lo <= a and b <= hi for lo, hi in regions(source)):
            raise Unusable("an edit touches text outside the editable regions (between INT21-EDIT-BEGIN and "
                           "INT21-EDIT-END)")
        if search.endswith("\n") and not replace.endswith("\n") and replace:
            replace += "\n"
        source = source[:a] + replace + source[b:]
    return source


def whole_kernel(parent: str, answer: str) -> str:
    blocks = [(lang.lower(), body) for lang, body in _FENCE.findall(answer)]
    code = [body for lang, body in blocks if lang in CODE_LANGS and body.strip()]
    if not code:
        raise Unusable("no code in the answer (expected one ```c fenced kernel or SEARCH/REPLACE edits)")
    if len(code) > 1:
        raise Unusable(f"{len(code)} code blocks in the answer; answer with exactly one whole kernel")
    source = code[0]
    fixed = _outside(parent)
    if fixed:
        if BEGIN not in source or END not in source:
            raise Unusable("the answer dropped the INT21-EDIT markers of the kernel")
        if _outside(source) != fixed:
            raise Unusable("the answer changed text outside the editable regions (between INT21-EDIT-BEGIN and "
                           "INT21-EDIT-END)")
    return source


# ------------------------------------------------------------------------ the entry point

def _strip_comments(source: str) -> str:
    s = re.sub(r"/\*.*?\*/", " ", source, flags=re.S)
    return re.sub(r"//[^\n]*", " ", s)


_TYPE = {"in": "const float *", "out": "float *", "dim": "int64_t", "f32": "float"}


def _arg_type(decl: str) -> str:
    words = re.sub(r"\b(__restrict__|__restrict|restrict)\b", " ", decl).replace("*", " * ").split()
    if words and words[-1] not in ("*",) and re.fullmatch(r"[A-Za-z_]\w*", words[-1]) and len(words) > 1:
        words = words[:-1]           # drop the parameter's name
    if words[:2] == ["float", "const"]:
        words = ["const", "float"] + words[2:]
    return " ".join(words).replace(" *", " *").replace("* ", "*").replace(" *", " *")


def check_entry_point(source: str, workload: Workload, target: str) -> None:
    """The kernel defines the workload's entry point with the declared argument types."""
    expected = workload.signature(target)
    text = _strip_comments(source)
    lb = r"(?:__launch_bounds__\s*\([^)]*\)\s*)?"
    if target == "cuda":
        pat = re.compile(r'extern\s+"C"\s+__global__\s+' + lb + r"void\s+" + lb + r"(\w+)\s*\(([^)]*)\)\s*\{")
    else:
        pat = re.compile(r"(?:^|[;}\s])((?:static\s+|inline\s+)*)void\s+(\w+)\s*\(([^)]*)\)\s*\{")
    found = []
    for m in pat.finditer(text):
        if target == "cuda":
            found.append(("", m.group(1), m.group(2)))
        else:
            found.append((m.group(1), m.group(2), m.group(3)))
    entry = [f for f in found if f[1] == "kernel"]
    if not entry:
        names = ", ".join(sorted({f[1] for f in found})) or "none"
        raise Unusable(f"wrong entry point: the kernel must define `{expected}` (functions found: {names})")
    if len(entry) > 1:
        raise Unusable("the entry point `kernel` is defined more than once")
    storage, _, params = entry[0]
    if "static" in storage:
        raise Unusable(f"wrong entry point: `kernel` is static, so it is not exported; define `{expected}`")
    got = [p.strip() for p in params.split(",") if p.strip() and p.strip() != "void"]
    want = [_TYPE[a.kind] for a in workload.args]
    types = [_arg_type(p) for p in got]
    norm = lambda t: t.replace(" ", "")  # noqa: E731
    if len(types) != len(want) or any(norm(t) != norm(w) for t, w in zip(types, want)):
        raise Unusable(f"wrong entry point: expected `{expected}`, found `kernel({', '.join(got)})`")


def kernel_from_answer(answer: str, parent: str, workload: Workload, target: str) -> tuple[str, str]:
    """``(source, mode)`` with mode ``edits`` or ``whole``; raises ``Unusable``."""
    if not answer or not answer.strip():
        raise Unusable("the answer is empty")
    if len(answer) > MAX_ANSWER:
        raise Unusable(f"the answer is {len(answer)} characters long (the limit is {MAX_ANSWER})")
    if re.search(r"^<{5,9}[ \t]*SEARCH", answer, re.M):
        source, mode = apply_edits(parent, answer), "edits"
    else:
        source, mode = whole_kernel(parent, answer), "whole"
    if len(source) > MAX_SOURCE:
        raise Unusable(f"the kernel is {len(source)} characters long (the limit is {MAX_SOURCE})")
    check_entry_point(source, workload, target)
    if " ".join(_strip_comments(source).split()) == " ".join(_strip_comments(parent).split()):
        raise Unusable("the answer is the parent kernel unchanged")
    if not source.endswith("\n"):
        source += "\n"
    return source, mode
