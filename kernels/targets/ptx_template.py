"""The PTX target's template step: design-space params into PTX text (ptxas has no preprocessor).

Trusted code applied to untrusted text, before ``ptxas`` sees it. It only selects, repeats
and fills in lines; it never evaluates Python (expressions go through the safe evaluator of
:class:`kernels.spec.Constraint`). A candidate without any of this is plain PTX and passes
through unchanged.

Directives, each on a line of its own (leading blanks allowed)::

    @if EXPR / @elif EXPR / @else / @endif     keep the lines of the first true branch
    @for NAME in range(A[, B[, STEP]])         repeat the lines up to @endfor, NAME bound to
    @endfor                                    each value (an unroll knob becomes a loop here)
    @define NAME text                          {{NAME}} is ``text`` from here on
    @set NAME = EXPR                           NAME is EXPR's value from here on (in expressions)
    @# a comment                               dropped

Names set by ``@define``, ``@set`` and ``@for`` are global from where they are met (like C
macros): a ``@define`` inside an ``@if`` branch is seen after its ``@endif``.

Placeholders ``{{EXPR}}`` anywhere in a kept line: a ``@define``'d NAME gives its text,
anything else an integer expression over the params, the loop names and the built-ins
``ARCH`` (the ptxas target, e.g. ``sm_90a``) and ``SM`` (its number, e.g. 90).

PTX's own ``@p`` / ``@!p`` predicate guards are instructions, not directives: only the words
above after ``@`` are. The output is capped (1 MiB, 1024 iterations per loop, depth 16).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from kernels.spec import Constraint, SpecError

MAX_OUTPUT = 1 << 20
MAX_ITERATIONS = 1024
MAX_DEPTH = 16
_DIRECTIVE = re.compile(r"^\s*@(if|elif|else|endif|for|endfor|define|set|#)(?=\s|$)(.*)$")
_SET = re.compile(r"^\s*([A-Za-z_]\w*)\s*=(?!=)\s*(.+)$")
_FOR = re.compile(r"^\s*([A-Za-z_]\w*)\s+in\s+range\s*\((.*)\)\s*$")
_DEFINE = re.compile(r"^\s*([A-Za-z_]\w*)(?:\s+(.*))?$")
_PLACEHOLDER = re.compile(r"\{\{(.*?)\}\}")


class TemplateError(ValueError):
    def __init__(self, line: int, message: str):
        super().__init__(f"line {line}: {message}")
        self.line = line


class _Expr(Constraint):
    """A Constraint's safe grammar, asked for its value rather than its truth."""

    def value(self, env):
        missing = [n for n in self.names if n not in env]
        if missing:
            raise SpecError(f"unknown name(s) {', '.join(missing)}")
        return self._eval(self._tree.body, env)


@dataclass
class _Node:
    kind: str                     # text | if | for | define | set
    line: int
    text: str = ""
    branches: list = field(default_factory=list)   # if: [(expr or None, [nodes])]
    body: list = field(default_factory=list)       # for
    name: str = ""


def expand(text: str, params: dict, arch: str) -> str:
    """``text`` with its directives applied and placeholders filled; raises TemplateError."""
    return expand_lines(text, params, arch)[0]


def expand_lines(text: str, params: dict, arch: str) -> tuple[str, list[int]]:
    """(expanded text, the template line each output line came from)."""
    lines = text.split("\n")
    if "@" not in text and "{{" not in text:
        return text, list(range(1, len(lines) + 1))
    nodes = _parse(lines)
    sm = re.match(r"sm_(\d+)", arch or "")
    env = {k: (int(v) if isinstance(v, bool) else v) for k, v in params.items()}  # one namespace
    env.update(ARCH=arch, SM=int(sm.group(1)) if sm else 0)
    out: list[str] = []
    origins: list[int] = []
    _render(nodes, env, {}, (out, origins), [0])
    return "\n".join(out), origins


def _parse(lines: list[str]) -> list[_Node]:
    root: list[_Node] = []
    stack: list[tuple[_Node | None, list[_Node]]] = [(None, root)]
    for number, line in enumerate(lines, start=1):
        m = _DIRECTIVE.match(line)
        if not m:
            stack[-1][1].append(_Node("text", number, text=line))
            continue
        word, rest = m.group(1), m.group(2).strip()
        top = stack[-1][0]
        if word == "#":
            continue
        if word == "define":
            d = _DEFINE.match(rest)
            if not d:
                raise TemplateError(number, "@define needs a NAME and its text")
            stack[-1][1].append(_Node("define", number, text=d.group(2) or "", name=d.group(1)))
        elif word == "set":
            d = _SET.match(rest)
            if not d:
                raise TemplateError(number, "@set reads '@set NAME = EXPR'")
            stack[-1][1].append(_Node("set", number, name=d.group(1), branches=[_compile(d.group(2), number)]))
        elif word == "if":
            node = _Node("if", number, branches=[(_compile(rest, number), [])])
            stack[-1][1].append(node)
            if len(stack) > MAX_DEPTH:
                raise TemplateError(number, f"directives nest deeper than {MAX_DEPTH}")
            stack.append((node, node.branches[0][1]))
        elif word in ("elif", "else"):
            if top is None or top.kind != "if" or top.branches[-1][0] is None:
                raise TemplateError(number, f"@{word} without an open @if")
            cond = _compile(rest, number) if word == "elif" else None
            if word == "else" and rest:
                raise TemplateError(number, "@else takes no expression (use @elif)")
            top.branches.append((cond, []))
            stack[-1] = (top, top.branches[-1][1])
        elif word == "endif":
            if top is None or top.kind != "if":
                raise TemplateError(number, "@endif without an open @if")
            stack.pop()
        elif word == "for":
            f = _FOR.match(rest)
            if not f:
                raise TemplateError(number, "@for reads '@for NAME in range(A[, B[, STEP]])'")
            node = _Node("for", number, name=f.group(1), text=f.group(2))
            node.branches = [_compile(a, number) for a in _split_args(f.group(2), number)]
            stack[-1][1].append(node)
            if len(stack) > MAX_DEPTH:
                raise TemplateError(number, f"directives nest deeper than {MAX_DEPTH}")
            stack.append((node, node.body))
        elif word == "endfor":
            if top is None or top.kind != "for":
                raise TemplateError(number, "@endfor without an open @for")
            stack.pop()
    if len(stack) > 1:
        node = stack[-1][0]
        raise TemplateError(node.line, f"@{node.kind} is never closed (@end{node.kind} missing)")
    return root


def _split_args(text: str, line: int) -> list[str]:
    args = [a.strip() for a in text.split(",")]
    if not 1 <= len(args) <= 3 or not all(args):
        raise TemplateError(line, "range() takes one to three arguments")
    return args


def _compile(expr: str, line: int) -> _Expr:
    if not expr:
        raise TemplateError(line, "a directive needs an expression")
    try:
        return _Expr(expr)
    except SpecError as exc:
        raise TemplateError(line, str(exc)) from None


def _value(expr: _Expr, env: dict, line: int):
    try:
        return expr.value(env)
    except (SpecError, TypeError, ZeroDivisionError, KeyError) as exc:
        raise TemplateError(line, f"cannot evaluate {expr.expr!r}: {exc}") from None


def _render(nodes, env, defines, out, size) -> None:
    for node in nodes:
        if node.kind == "text":
            line = _fill(node.text, env, defines, node.line)
            size[0] += len(line) + 1
            if size[0] > MAX_OUTPUT:
                raise TemplateError(node.line, f"the expanded PTX would exceed {MAX_OUTPUT >> 10} KiB")
            out[0].append(line)
            out[1].append(node.line)
        elif node.kind == "define":
            defines[node.name] = _fill(node.text, env, defines, node.line)
        elif node.kind == "set":
            env[node.name] = _value(node.branches[0], env, node.line)
        elif node.kind == "if":
            for cond, body in node.branches:
                if cond is None or _value(cond, env, node.line):
                    _render(body, env, defines, out, size)
                    break
        else:
            bounds = [_value(a, env, node.line) for a in node.branches]
            if not all(isinstance(b, int) and not isinstance(b, bool) for b in bounds):
                raise TemplateError(node.line, "range() bounds must be integers")
            values = range(*bounds)
            if len(values) > MAX_ITERATIONS:
                raise TemplateError(node.line, f"@for repeats more than {MAX_ITERATIONS} times")
            for v in values:
                env[node.name] = v
                _render(node.body, env, defines, out, size)


def _fill(text: str, env: dict, defines: dict, line: int) -> str:
    if "{{" not in text:
        return text

    def one(m: re.Match) -> str:
        inner = m.group(1).strip()
        if inner in defines:
            return defines[inner]
        value = _value(_compile(inner, line), env, line)
        if isinstance(value, bool):
            value = int(value)
        if isinstance(value, str) and inner == "ARCH":
            return value
        if not isinstance(value, int):
            raise TemplateError(line, f"{{{{{inner}}}}} is not an integer or a @define'd name")
        return str(value)
    filled = _PLACEHOLDER.sub(one, text)
    if "{{" in filled:
        raise TemplateError(line, "an unclosed {{ placeholder")
    return filled
