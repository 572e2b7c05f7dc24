"""Diff views of a candidate against its parent, built server-side from difflib (pure)."""
from __future__ import annotations

import difflib
import re
from itertools import zip_longest

_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


def kernel_text(source: str, params: dict) -> list[str]:
    """What a candidate compiles: its params as macros, then its source (the same text the
    run's stored unified diff was made from)."""
    head = "".join(f"#define {k} {v}\n" for k, v in sorted(params.items()))
    return (head + source).splitlines()


def unified_rows(diff: str) -> list[dict]:
    """Rows of a unified diff: kind (file, hunk, add, del, ctx), old/new line numbers, text."""
    rows, old, new, in_hunk = [], 0, 0, False
    for line in diff.splitlines():
        m = _HUNK.match(line)
        if not in_hunk and not m:
            rows.append({"kind": "file", "old": "", "new": "", "text": line})
        elif m:
            in_hunk = True
            old, new = int(m.group(1)), int(m.group(2))
            rows.append({"kind": "hunk", "old": "", "new": "", "text": line})
        elif line.startswith("+"):
            rows.append({"kind": "add", "old": "", "new": new, "text": line[1:]})
            new += 1
        elif line.startswith("-"):
            rows.append({"kind": "del", "old": old, "new": "", "text": line[1:]})
            old += 1
        elif line.startswith("\\"):
            rows.append({"kind": "ctx", "old": "", "new": "", "text": line})
        else:
            rows.append({"kind": "ctx", "old": old, "new": new, "text": line[1:]})
            old += 1
            new += 1
    return rows


def unified_text(old: list[str], new: list[str], old_name: str, new_name: str, context: int = 3) -> str:
    return "\n".join(difflib.unified_diff(old, new, fromfile=old_name, tofile=new_name, lineterm="", n=context))


def side_by_side(old: list[str], new: list[str], context: int = 3) -> list[dict]:
    """Rows of a two-column diff: kind (hunk, ctx, change, del, add), left/right line number
    and text; unchanged stretches beyond ``context`` lines are folded into hunk rows."""
    rows = []
    for group in difflib.SequenceMatcher(None, old, new, autojunk=False).get_grouped_opcodes(context):
        first = group[0]
        rows.append({"kind": "hunk", "left_no": "", "left": f"line {first[1] + 1}", "right_no": "",
                     "right": f"line {first[3] + 1}"})
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                for k in range(i2 - i1):
                    rows.append({"kind": "ctx", "left_no": i1 + k + 1, "left": old[i1 + k],
                                 "right_no": j1 + k + 1, "right": new[j1 + k]})
                continue
            kind = {"replace": "change", "delete": "del", "insert": "add"}[tag]
            for a, b in zip_longest(range(i1, i2), range(j1, j2)):
                rows.append({"kind": kind, "left_no": "" if a is None else a + 1, "left": "" if a is None else old[a],
                             "right_no": "" if b is None else b + 1, "right": "" if b is None else new[b]})
    return rows
