"""One unit for a range of a dim: shapes whose generated code differs only in integers affine in
that dim share a unit that reads the dim at run time.

A captured graph is specialised to its shape, so :func:`kernels.codegen.program.generate_multi`
writes a unit per shape with every size a literal. A decode step captured after 127, 128 and
1023 cached positions gives three units whose texts match token for token except for integers
such as ``128 * 64`` (a cache stride), ``129`` (keys attended) or ``8192`` (the RoPE row
``past``), and each of those is ``a * past + b``. :func:`find` recognises that, and
:func:`render` writes the one unit with each such literal replaced by ``(a * <dim> + b)``,
which then serves every value of the dim between the smallest and the largest member:

- every member's unit must have the same text once integer literals are masked (the same
  partition, the same groups, the same loops, floats included);
- each literal that differs must fit ``a * d + b`` with integers ``a``, ``b``, fitted on the
  smallest and largest member and matched exactly by every other member (three members at
  least, so one checks the fit);
- no varying literal may sit on a preprocessor line (``#if``, ``#pragma``): those are fixed at
  compile time; the arena's size (``<prefix>ARENA_VALUES`` and the scratch sizes) is taken at
  the largest member, so one allocation serves the whole range;
- the members must have been fed identical params (the caller's digests): a constant folded
  from the dim (a RoPE row computed at capture) would otherwise be stale between members.

The arena's placements are affine too, so two buffers that do not overlap at the smallest and
at the largest member do not overlap anywhere between them (an affine inequality that holds at
both ends of an interval holds inside it). Outside ``[lo, hi]`` nothing is claimed, and the
unit is not dispatched there. The members are the shapes the harness judges, so the shared
unit is what was checked, at every member.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

# identifiers, numbers with a fraction, exponent or suffix (kept whole: never generalised), plain integers
TOKEN = re.compile(r"[A-Za-z_]\w*|0[xX][0-9a-fA-F]+[uUlL]*|(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?[fFuUlL]*")
INT = re.compile(r"\d+")


@dataclass
class Shared:
    """A unit shared by ``members`` (indices into the shapes), serving ``dim`` in ``lo..hi``."""

    dim: str
    lo: int
    hi: int
    members: list
    fits: dict          # literal position -> (a, b): the literal is a * dim + b
    text: str           # the representative unit's text with its prefix as PREFIX_MARK

    def to_json(self) -> dict:
        return {"dim": self.dim, "lo": self.lo, "hi": self.hi, "members": list(self.members),
                "affine_literals": len(self.fits)}


PREFIX_MARK = "@PREFIX@"


def _literals(text: str):
    """(skeleton, [(start, end, value)]) with every plain integer literal masked as '#'."""
    spans, parts, last = [], [], 0
    for m in TOKEN.finditer(text):
        if INT.fullmatch(m.group()):
            spans.append((m.start(), m.end(), int(m.group())))
            parts.append(text[last:m.start()])
            parts.append("#")
            last = m.end()
    parts.append(text[last:])
    return "".join(parts), spans


def _line(text: str, pos: int) -> str:
    """The line of ``text`` holding ``pos``."""
    end = text.find("\n", pos)
    return text[text.rfind("\n", 0, pos) + 1:end if end >= 0 else len(text)]


def affine(xs: list, ys: list) -> tuple[int, int] | None:
    """Integers (a, b) with ``y == a * x + b`` at every point (fitted on the smallest and the
    largest x, the others checked), or None. The xs must be distinct."""
    lo = min(range(len(xs)), key=xs.__getitem__)
    hi = max(range(len(xs)), key=xs.__getitem__)
    a, rem = divmod(ys[hi] - ys[lo], xs[hi] - xs[lo])
    b = ys[lo] - a * xs[lo]
    if rem or any(y != a * x + b for x, y in zip(xs, ys)):
        return None
    return a, b


def fit(texts: list, values: list, *, arena_define: str = "ARENA_VALUES"):
    """The affine fit of the literals of ``texts`` (units, prefix masked) over ``values`` of
    the dim, or None where they do not share a unit: {position: (a, b)} for the varying ones."""
    if len(texts) < 3 or len(set(values)) != len(values):
        return None
    split = [_literals(t) for t in texts]
    if any(s[0] != split[0][0] for s in split[1:]):
        return None
    text0, spans0 = texts[0], split[0][1]
    fits = {}
    for pos in range(len(spans0)):
        vals = [s[1][pos][2] for s in split]
        if len(set(vals)) == 1:
            continue
        ab = affine(values, vals)
        if ab is None:
            return None
        a, b = ab
        line = _line(text0, spans0[pos][0])
        if line.lstrip().startswith("#") and (arena_define not in line or a < 0):
            return None   # fixed at compile time; the arena's size is taken at hi, so it must grow with d
        fits[pos] = (a, b)
    return fits


def find(units: list, dims: list, dim_names: list, param_digests: list | None = None) -> list:
    """The shared units among ``units`` (texts, each with its prefix already replaced by
    PREFIX_MARK) at ``dims`` (one tuple of values per unit, in ``dim_names`` order): for each
    dim, the units that agree on every other dim (and on their params' digest) and fit
    (:func:`fit`). A unit joins one shared unit at most."""
    taken: set = set()
    out = []
    for d, name in enumerate(dim_names):
        groups: dict = {}
        for k, vals in enumerate(dims):
            if k in taken:
                continue
            key = (tuple(v for j, v in enumerate(vals) if j != d), param_digests[k] if param_digests else None)
            groups.setdefault(key, []).append(k)
        for group in groups.values():
            got = _widest(group, [int(dims[k][d]) for k in group], units)
            if got:
                members, values, fits = got
                rep = members[values.index(max(values))]
                out.append(Shared(name, min(values), max(values), sorted(members), fits, units[rep]))
                taken.update(members)
    return out


def _widest(group: list, values: list, units: list):
    """The run of ``group`` (sorted by value) spanning the widest range of values that fits,
    as (members, values, fits), or None. A short cache's units often differ (the arena places
    small buffers elsewhere), so the run may leave out the smallest values."""
    order = sorted(range(len(group)), key=values.__getitem__)
    members = [group[i] for i in order]
    vals = [values[i] for i in order]
    if len(set(vals)) != len(vals):
        return None
    spans = sorted(((i, j) for i in range(len(vals)) for j in range(i + 3, len(vals) + 1)),
                   key=lambda ij: (vals[ij[0]] - vals[ij[1] - 1], ij[0]))
    for i, j in spans:
        fits = fit([units[k] for k in members[i:j]], vals[i:j])
        if fits:
            return members[i:j], vals[i:j], fits
    return None


def render(shared: Shared, prefix: str, variable: str) -> str:
    """The shared unit's text with ``prefix``: each varying literal is ``(a * variable + b)``,
    except in the arena's size (``ARENA_VALUES`` and the ``arena_scratch`` function), where it
    is its value at ``hi``: one allocation serves the whole range."""
    text = shared.text
    _, spans = _literals(text)
    # the representative is the largest member: its literals are the values at hi
    hi_value = {pos: a * shared.hi + b for pos, (a, b) in shared.fits.items()}
    scratch_fn = re.search(re.escape(PREFIX_MARK) + r"arena_scratch\(void\) \{.*?\n\}", text, re.S)
    parts, last = [], 0
    for pos, (start, end, value) in enumerate(spans):
        if pos not in shared.fits:
            continue
        assert value == hi_value[pos]
        a, b = shared.fits[pos]
        line = _line(text, start)
        in_scratch = scratch_fn is not None and scratch_fn.start() <= start < scratch_fn.end()
        if line.lstrip().startswith("#define") or in_scratch:   # the arena's size: at hi
            continue
        term = variable if a == 1 else f"{a} * {variable}"
        parts += [text[last:start], f"({term} + {b})" if b > 0 else f"({term} - {-b})" if b < 0 else f"({term})"]
        last = end
    parts.append(text[last:])
    return "".join(parts).replace(PREFIX_MARK, prefix)
