"""Team form: a program's groups run inside one parallel region, with spin barriers between them.

Each group's kernel opens its own OpenMP regions, so a decode step of a 4-layer decoder opens
about forty two-thread regions. Under a passive wait policy (the harness's: an idle thread
sleeps at once) every region wakes a sleeping thread and every join puts one to sleep, and on
a virtual machine a wake-up costs tens of microseconds or more (docs/engine.md). In the team
form the program's ``run`` opens one region for the whole call; each group runs as a *team
function*, the same code with its ``#pragma omp parallel`` removed, its work-sharing loops
orphaned (they bind to the program's region) and ``nowait``, and :data:`SYNC`'s spin barrier
where the region's join was. Nothing sleeps between groups; after the call the threads idle
under whatever policy the process has. Where a teammate is late past a bound (its core is
shared with other work: spinning would only keep it off the core), the round falls back to
OpenMP's barrier, where threads sleep.

:func:`team_body` derives a group's team function from its body, or says why it cannot:

- every ``#pragma omp parallel`` must be at the body's top level, with only ``num_threads``,
  ``collapse``, ``schedule``, ``private`` and ``default(shared)`` clauses (a ``reduction`` or
  ``lastprivate`` into a function-scope variable would become per-thread);
- inside a region, only ``for`` (with the same clauses, or ``nowait``), ``barrier`` and
  ``simd`` constructs (``single``, ``critical``, ``atomic``... are refused);
- outside the regions, only declarations of ``const`` locals, ``(void)`` casts, comments and
  preprocessor lines: every thread of the team runs them.

A region whose ``num_threads`` (a group's THREADS knob, known when the source is compiled) is
above 1 runs in team form; the team is the fewest threads any region asks for beyond one, so a
region never runs on more threads than it asked for (it may size per-thread scratch by its
count). A region asking for one runs as it was, on thread 0, its region nested with one
thread, the rest of the team waiting at the barrier after it. Only one of the two is compiled. A group
without a team function runs, whole, on thread 0 (its own regions then run nested, with one
thread). The program's TEAM knob switches the form off (:mod:`kernels.codegen.program`).
"""
from __future__ import annotations

import re

SYNC = r"""/* The team form's barrier (kernels/codegen/team.py): the threads of the program's one
 * parallel region meet here between groups, spinning. A thread that has spun I21_SPIN times
 * (a teammate is late: its core is shared with other work) marks the round slow and waits in
 * OpenMP's own barrier, asleep, and so does every thread of that round; the others never
 * sleep. One word holds the round (high 32 bits), the last round's slow mark (bit 17), this
 * round's (bit 16) and how many have arrived (low 16 bits). */
static uint64_t i21_sync_state;
#ifndef I21_SPIN
#define I21_SPIN 400000   /* about 10 ms of pause loops (25 ns each on the hosts measured) */
#endif
/* A slow round costs its sleepers a wake-up, which makes them late for the next round too; so
 * after 3 slow rounds in a row (a core shared with other work) the rest of the call spins
 * I21_SPIN / 64 before it sleeps, and so do the calls after it, until a call has no slow
 * round, or every 16th call, which tries the whole budget again. */
static long i21_sync_spin = I21_SPIN;
static int i21_sync_streak, i21_sync_calm = 1;
static unsigned i21_sync_calls;
static inline void i21_sync_begin(void) {   /* before the team's region, on one thread */
    if (i21_sync_calm || ++i21_sync_calls % 16 == 0)
        i21_sync_spin = I21_SPIN;
    i21_sync_calm = 1;
    i21_sync_streak = 0;
}
#if defined(__x86_64__) || defined(__i386__)
#define I21_PAUSE() __builtin_ia32_pause()
#else
#define I21_PAUSE() ((void)0)
#endif
static inline void i21_sync(void) {
    const uint64_t n = (uint64_t)omp_get_num_threads();
    if (n <= 1) return;
    uint64_t s = __atomic_load_n(&i21_sync_state, __ATOMIC_ACQUIRE), next;
    int last;
    do {
        last = (s & 0xffff) + 1 == n;
        next = last ? (((s >> 32) + 1) << 32) | ((s >> 16 & 1) << 17) : s + 1;
    } while (!__atomic_compare_exchange_n(&i21_sync_state, &s, next, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
    if (last) {
        if (s >> 16 & 1) {
            #pragma omp barrier
        }
        return;
    }
    const uint64_t round = s >> 32;
    for (long spin = 0;; spin++) {
        uint64_t now = __atomic_load_n(&i21_sync_state, __ATOMIC_ACQUIRE);
        if (now >> 32 != round) {
            if (now >> 17 & 1) {
                #pragma omp barrier
            } else {
                __atomic_store_n(&i21_sync_streak, 0, __ATOMIC_RELAXED);
            }
            return;
        }
        if (spin >= __atomic_load_n(&i21_sync_spin, __ATOMIC_RELAXED) && ((now >> 16 & 1) ||
                __atomic_compare_exchange_n(&i21_sync_state, &now, now | (1u << 16), 0, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE))) {
            __atomic_store_n(&i21_sync_calm, 0, __ATOMIC_RELAXED);
            if (__atomic_add_fetch(&i21_sync_streak, 1, __ATOMIC_RELAXED) >= 3)
                __atomic_store_n(&i21_sync_spin, I21_SPIN / 64, __ATOMIC_RELAXED);
            #pragma omp barrier
            return;
        }
        I21_PAUSE();
    }
}
"""

PRAGMA = re.compile(r"^\s*#\s*pragma\s+omp\b(.*)$")
REGION_CLAUSES = ("num_threads", "collapse", "schedule", "private", "default")
FOR_CLAUSES = ("collapse", "schedule", "private", "nowait")
SAFE_LINE = re.compile(r"^(const\s+[A-Za-z_][\w\s\*]*?\b[A-Za-z_]\w*\s*(\[[^\]]*\])?\s*=.*|\(void\)\s*[\w\s\(\)]*|"
                       r"\(void\)\s*0)\s*;$")


class NotTeam(Exception):
    """Why a group's body has no team form."""


def team_body(body: str) -> str:
    """The team function's body for a group ``body`` (see the module); raises
    :class:`NotTeam` with the reason where there is none."""
    text = _strip_comments(body)
    out, pos = [], 0
    while pos < len(text):
        line_end = text.find("\n", pos)
        line_end = len(text) if line_end < 0 else line_end
        line = text[pos:line_end]
        m = PRAGMA.match(line)
        if m:
            words = m.group(1).split()
            if words[:1] != ["parallel"]:
                raise NotTeam(f"`#pragma omp {m.group(1).strip()}` outside a parallel region")
            start = line_end + 1
            end = _statement_end(text, start)
            out.append(_region(m.group(1), text[start:end]))
            pos = end
            continue
        stripped = line.strip()
        if stripped.startswith("#") or not stripped:
            out.append(line)
            pos = line_end + 1
            continue
        end = _statement_end(text, pos)
        stmt = " ".join(text[pos:end].split())
        for piece in _split_statements(stmt):
            if not SAFE_LINE.match(piece):
                # the statement's first word only: the reason is a comment in the source, where a
                # literal that varies with a shape would keep shapes from sharing a unit (dynamic.py)
                first = re.match(r"[A-Za-z_]\w*|\S", piece).group()
                raise NotTeam(f"every thread would run a `{first} ...` statement outside the parallel regions")
        out.append(text[pos:end])
        pos = end
    return "\n".join(x.rstrip("\n") for x in out if x is not None) + "\n"


def _region(directive: str, stmt: str) -> str:
    """One ``#pragma omp parallel ...`` and its statement, in team form."""
    words = directive.split()
    is_for = len(words) > 1 and words[1] == "for"
    clauses = _clauses(" ".join(words[2:] if is_for else words[1:]))
    threads = None
    for name, arg in clauses:
        allowed = REGION_CLAUSES + (FOR_CLAUSES if is_for else ())
        if name not in allowed or (name == "default" and arg.strip() != "shared"):
            raise NotTeam(f"the region's `{name}` clause")
        if name == "num_threads":
            threads = arg.strip()
            if not re.fullmatch(r"[A-Za-z_]\w*|\d+", threads):
                raise NotTeam(f"num_threads({threads}) is not a name or a number")
    kept = " ".join(f"{n}({a})" if a is not None else n for n, a in clauses
                    if n not in ("num_threads", "default") and n != "nowait")
    if is_for:
        team = f"#pragma omp for {kept} nowait\n{stmt.rstrip()}\ni21_sync();\n"
    else:
        team = f"{{\n{_inner(stmt)}\n}}\ni21_sync();\n"
    if threads is None:
        raise NotTeam("a region without num_threads")
    alone = (f"if (omp_get_thread_num() == 0) {{\n#pragma omp parallel{' for' if is_for else ''} "
             f"{' '.join(words[2:] if is_for else words[1:])}\n{stmt.rstrip()}\n}}\ni21_sync();\n")
    # chosen when compiled (the count is a knob): one loop of the two is built; the team never
    # has more threads than a region asks for (program.py's team_threads), so scratch sized by
    # the count is enough
    return f"#if ({threads}) > 1\n{team}#else\n{alone}#endif\n"


def _inner(stmt: str) -> str:
    """A parallel block's statement with its work-sharing loops orphaned and ``nowait``, a
    spin barrier after each that had an implicit one, and ``barrier`` replaced by it."""
    out, pos = [], 0
    while pos < len(stmt):
        m = re.search(r"^[ \t]*#\s*pragma\s+omp\b(.*)$", stmt[pos:], re.M)
        if not m:
            out.append(stmt[pos:])
            break
        out.append(stmt[pos:pos + m.start()])
        words = m.group(1).split()
        after = pos + m.end() + 1
        if words[:1] == ["simd"]:
            out.append(m.group(0) + "\n")
            pos = after
        elif words[:1] == ["barrier"] and len(words) == 1:
            out.append("i21_sync();\n")
            pos = after
        elif words[:1] == ["for"]:
            clauses = _clauses(" ".join(words[1:]))
            for name, _ in clauses:
                if name not in FOR_CLAUSES:
                    raise NotTeam(f"the work-sharing loop's `{name}` clause")
            end = _statement_end(stmt, after)
            waits = not any(n == "nowait" for n, _ in clauses)
            kept = " ".join(f"{n}({a})" if a is not None else n for n, a in clauses if n != "nowait")
            out.append(f"#pragma omp for {kept} nowait\n{stmt[after:end].rstrip()}\n"
                       + ("i21_sync();\n" if waits else ""))
            pos = end
        else:
            raise NotTeam(f"`#pragma omp {m.group(1).strip()}` inside a parallel region")
    return "".join(out)


def _clauses(text: str) -> list:
    """``name(arg)`` and bare ``name`` clauses of a directive, in order."""
    out, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = re.compile(r"\s*([A-Za-z_]\w*)\s*").match(text, pos)
        if not m:
            raise NotTeam(f"cannot read the clauses `{text}`")
        name, pos = m.group(1), m.end()
        arg = None
        if pos < len(text) and text[pos] == "(":
            close = _match(text, pos, "(", ")")
            arg, pos = text[pos + 1:close], close + 1
        out.append((name, arg))
        while pos < len(text) and text[pos] in " ,\t":
            pos += 1
    return out


def _strip_comments(text: str) -> str:
    """Comments dropped (a block comment's newlines kept); string and char literals left alone."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(" " + "\n" * text.count("\n", i, j))   # its length would vary with its literals
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif c in "\"'":
            j = _literal_end(text, i)
            out.append(text[i:j])
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _literal_end(text: str, i: int) -> int:
    quote, j = text[i], i + 1
    while j < len(text) and text[j] != quote:
        j += 2 if text[j] == "\\" else 1
    return j + 1


def _match(text: str, i: int, open_: str, close: str) -> int:
    """The index of the bracket closing the one at ``i``."""
    depth = 0
    j = i
    while j < len(text):
        c = text[j]
        if c in "\"'":
            j = _literal_end(text, j)
            continue
        if c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return j
        j += 1
    raise NotTeam("unbalanced brackets")


def _skip_space(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\n\r":
        i += 1
    return i


def _statement_end(text: str, i: int) -> int:
    """The index just past the C statement starting at (or after whitespace from) ``i``."""
    i = _skip_space(text, i)
    if i >= len(text):
        raise NotTeam("a directive without a statement")
    if text[i] == "#":
        raise NotTeam("a preprocessor line where a statement was expected")
    if text[i] == "{":
        return _match(text, i, "{", "}") + 1
    m = re.compile(r"(for|while|if|switch)\b\s*").match(text, i)
    if m:
        paren = _skip_space(text, m.end())
        if paren >= len(text) or text[paren] != "(":
            raise NotTeam(f"cannot read a `{m.group(1)}` statement")
        end = _statement_end(text, _match(text, paren, "(", ")") + 1)
        if m.group(1) == "if":
            nxt = _skip_space(text, end)
            if re.compile(r"else\b").match(text, nxt):
                end = _statement_end(text, nxt + 4)
        return end
    if re.compile(r"(do|else)\b").match(text, i):
        raise NotTeam("a `do` or dangling `else` statement")
    depth, j = 0, i
    while j < len(text):
        c = text[j]
        if c in "\"'":
            j = _literal_end(text, j)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth < 0:
                raise NotTeam("unbalanced brackets")
        elif c == ";" and depth == 0:
            return j + 1
        j += 1
    raise NotTeam("a statement without its `;`")


def _split_statements(stmt: str) -> list:
    return [s.strip() + ";" for s in stmt.split(";") if s.strip()] if stmt.count(";") > 1 else [stmt.strip()]
