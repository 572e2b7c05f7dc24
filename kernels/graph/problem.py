"""A problem file as text: its module constants and overrides of them, without running it.

KernelBench problems keep their sizes in module-level constants (``batch_size = 128``).
:func:`constants` lists the simple ones (``NAME = <int or float literal>`` at the top
level); :func:`with_overrides` rewrites just those literals in place, so the rest of the
file — and every line number a traceback will quote — stays as the user wrote it. The file
is only parsed here (``ast.parse``), never executed.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

MAX_SOURCE_BYTES = 1 << 20


class ProblemError(ValueError):
    """The text cannot be used (too big, not Python, an override that does not apply)."""


@dataclass(frozen=True)
class Constant:
    name: str
    value: int | float
    line: int
    span: tuple[int, int, int, int]   # (line, col, end_line, end_col) of the literal


def parse(source: str) -> ast.Module:
    if not isinstance(source, str):
        raise ProblemError("the problem must be Python source text")
    if len(source.encode("utf-8", "replace")) > MAX_SOURCE_BYTES:
        raise ProblemError(f"the problem file is larger than {MAX_SOURCE_BYTES >> 10} KiB")
    if "\x00" in source:
        raise ProblemError("the problem file contains NUL bytes")
    try:
        return ast.parse(source, filename="problem.py")
    except SyntaxError as exc:
        raise ProblemError(f"syntax error on line {exc.lineno}: {exc.msg}") from None
    except (RecursionError, MemoryError, ValueError) as exc:
        raise ProblemError(f"the problem file cannot be parsed: {type(exc).__name__}") from None


def constants(source: str) -> dict[str, Constant]:
    """Top-level ``NAME = literal`` assignments (ints and floats, negatives included); the
    last assignment of a name wins, as it would when the module runs."""
    out: dict[str, Constant] = {}
    for node in parse(source).body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        value = _literal(node.value)
        if value is None:
            out.pop(node.targets[0].id, None)
            continue
        v = node.value
        out[node.targets[0].id] = Constant(node.targets[0].id, value, node.lineno,
                                           (v.lineno, v.col_offset, v.end_lineno, v.end_col_offset))
    return out


def _literal(v: ast.expr):
    neg = False
    if isinstance(v, ast.UnaryOp) and isinstance(v.op, ast.USub):
        neg, v = True, v.operand
    if isinstance(v, ast.Constant) and isinstance(v.value, (int, float)) and not isinstance(v.value, bool):
        return -v.value if neg else v.value
    return None


def with_overrides(source: str, overrides: dict | None) -> str:
    """``source`` with the named constants' literals replaced. An unknown name, a type change
    (an int constant given a float) or a non-positive size is a :class:`ProblemError`."""
    if not overrides:
        parse(source)
        return source
    known = constants(source)
    lines = source.splitlines(True)
    edits = []
    for name, value in overrides.items():
        if name not in known:
            raise ProblemError(f"the problem file has no module constant {name!r} to set "
                               f"(it has: {', '.join(sorted(known)) or 'none'})")
        const = known[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ProblemError(f"{name} must be set to a number, got {value!r}")
        if isinstance(const.value, int) and not isinstance(value, int):
            if float(value).is_integer():
                value = int(value)
            else:
                raise ProblemError(f"{name} is an integer constant; {value!r} is not an integer")
        edits.append((const.span, repr(value)))
    for (line, col, end_line, end_col), text in sorted(edits, reverse=True):
        if line != end_line:
            raise ProblemError("a constant's literal spans several lines; it cannot be overridden")
        row = lines[line - 1]
        # col offsets are in UTF-8 bytes
        raw = row.encode("utf-8")
        lines[line - 1] = (raw[:col] + text.encode() + raw[end_col:]).decode("utf-8")
    out = "".join(lines)
    parse(out)
    return out


def parse_overrides(items) -> dict:
    """``["batch_size=64", "dim=0.5"]`` → ``{"batch_size": 64, "dim": 0.5}``."""
    out = {}
    for item in items or ():
        name, sep, text = str(item).partition("=")
        name, text = name.strip(), text.strip()
        if not sep or not name.isidentifier():
            raise ProblemError(f"an override is NAME=VALUE, got {item!r}")
        try:
            out[name] = int(text)
        except ValueError:
            try:
                out[name] = float(text)
            except ValueError:
                raise ProblemError(f"override {name}: {text!r} is not a number") from None
    return out
