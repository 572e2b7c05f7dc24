"""What a candidate is checked and timed on: cases, their data, and the expected outputs.

Two kinds of data:

- **Small cases** (awkward, aligned, minimal, held-out shapes): fresh inputs per seed and
  distribution, checked in full against the float64 reference.
- **Large data** (every typical shape, the timed one on every distribution): one base data
  set per shape and distribution, drawn once per process from a secret seed (inputs and
  references at these sizes take seconds). Each session presents it reordered along the
  workload's independent dims by a secret permutation — a new one for every timed call —
  so no two calls see the same bytes and no cache keyed on anything can hit, while the
  expected output stays exact: the reference reordered the same way (gathered from the
  cached reference, or computed on the slice that is checked). A workload without
  independent dims is timed on a pool of several base sets in a secret order instead.

Every input and reference here is built in a memory-limited child (:mod:`kernels.harness.build`),
never in the evaluator's process: the small cases of an evaluation in one child; a base set's
inputs, its full reference and each checked slice's reference in one child each. What comes
back is cached per process (small cases by their seed, base sets by their secret one), so an
evaluation after the first forks only for the slices it checks.
"""
from __future__ import annotations

import secrets
from dataclasses import dataclass, field

import numpy as np

from kernels.harness import build
from kernels.harness.verify import Prepared
from kernels.limits import footprint_bytes
from kernels.spec import Shape, Tolerance, Workload

# This process's secret: the base data sets of large shapes are drawn from it, so no
# candidate (nor its author) can know them in advance.
_PROCESS_SEED = secrets.randbits(63)
BASE_CACHE_BYTES = 1536 << 20     # base data sets (inputs + references) kept per process
SMALL_CACHE_BYTES = 256 << 20     # small cases' inputs and references kept per process
POOL = 3                          # base sets of a workload that cannot be reordered


@dataclass
class Case:
    id: str
    kind: str                      # awkward | aligned | minimal | held_out | custom | typical
    shape: Shape
    distribution: str
    seed: int
    inputs: dict = field(default_factory=dict)     # float32 arrays as presented to the kernel
    scalars: dict = field(default_factory=dict)
    reference: dict | None = None                  # full float64 reference of `inputs` (small cases)
    view: "View | None" = None                     # large cases: the reordered base set
    reports: dict = field(default_factory=dict)
    sensitivity: dict | None = None                # see sensitivity() below, once asked

    def label(self) -> str:
        kind = {"timed": "the timed shape", "typical": "typical shape"}.get(self.kind, self.kind)
        return f"{kind} {self.shape} {self.distribution}" + ("" if self.view else f" seed {self.seed}")


def small_cases(wl: Workload, *, seeds: int, shapes: list[tuple[str, Shape]]) -> list[Case]:
    """Every shape with ``seeds`` seeds and every distribution (more than seeds: extra cases)."""
    cases = []
    dists = wl.distributions
    for si, (kind, shape) in enumerate(shapes):
        seen = set()
        for seed in range(seeds):
            dist = dists[(seed + si) % len(dists)]
            seen.add(dist)
            cases.append(Case(f"c{len(cases)}", kind, shape, dist, seed))
        for extra in (d for d in dists if d not in seen):
            cases.append(Case(f"c{len(cases)}", kind, shape, extra, 100 + len(cases)))
    return cases


def materialise(wl: Workload, case: Case) -> None:
    materialise_all(wl, [case])


_SMALL: dict[tuple, tuple] = {}    # (workload, shape, distribution, seed) → (workload, inputs, scalars, reference)


def materialise_all(wl: Workload, cases: list[Case]) -> None:
    """Each case's inputs and full float64 reference: those not cached, built in one child."""
    def key(c):
        return (wl.name, c.shape.label(), c.distribution, c.seed)
    found = {key(c): _SMALL[key(c)] for c in cases if _SMALL.get(key(c), (None,))[0] is wl}
    todo = [c for c in cases if key(c) not in found]
    if todo:
        def draw() -> dict:
            out = {}
            for i, c in enumerate(todo):
                inputs, scalars = _split(wl.make_inputs(c.shape, c.distribution, c.seed))
                ref = wl.reference({**inputs, **scalars}, c.shape)
                out.update({f"{i}:in:{n}": v for n, v in inputs.items()})
                out.update({f"{i}:sc:{n}": v for n, v in scalars.items()})
                out.update({f"{i}:ref:{n}": np.asarray(v) for n, v in ref.items()})
            return out
        shapes = {c.shape.label(): c.shape for c in todo}
        got = build.in_child(draw, budget=build.budget_for(sum(footprint_bytes(wl, s) for s in shapes.values())),
                             what=f"the inputs and references of {len(todo)} small cases of {wl.name}")
        parts = [{"in": {}, "sc": {}, "ref": {}} for _ in todo]
        for name, v in got.items():
            index, part, arg = name.split(":", 2)
            parts[int(index)][part][arg] = v
        for c, p in zip(todo, parts):
            found[key(c)] = _SMALL[key(c)] = (wl, p["in"], p["sc"], p["ref"])
        while len(_SMALL) > 1 and sum(_small_nbytes(v) for v in _SMALL.values()) > SMALL_CACHE_BYTES:
            _SMALL.pop(next(iter(_SMALL)))
    for c in cases:     # from this call's own hold: trimming the cache may have dropped any of them
        _, c.inputs, c.scalars, c.reference = found[key(c)]


def _small_nbytes(entry: tuple) -> int:
    return sum(a.nbytes for part in (entry[1], entry[3]) for a in part.values())


def _split(data: dict) -> tuple[dict, dict]:
    inputs = {n: np.ascontiguousarray(v, dtype=np.float32) for n, v in data.items() if isinstance(v, np.ndarray)}
    scalars = {n: float(v) for n, v in data.items() if not isinstance(v, np.ndarray)}
    return inputs, scalars


# --------------------------------------------------------------------------- base sets

@dataclass
class Base:
    """One base data set of a large shape: inputs, scalars, and (once asked) its reference."""

    wl: Workload
    shape: Shape
    distribution: str
    inputs: dict
    scalars: dict
    reference: dict | None = None
    prepared: dict | None = None

    def nbytes(self) -> int:
        ref = sum(r.nbytes for r in (self.reference or {}).values())
        prep = sum(p.ref32.nbytes * 3 for p in (self.prepared or {}).values())
        return sum(a.nbytes for a in self.inputs.values()) + ref + prep

    def full_reference(self, tol: Tolerance) -> dict:
        if self.reference is None:
            wl, shape, feeds = self.wl, self.shape, {**self.inputs, **self.scalars}
            self.reference = build.in_child(
                lambda: {n: np.asarray(v) for n, v in wl.reference(feeds, shape).items()},
                budget=build.budget_for(footprint_bytes(wl, shape)), what=f"the float64 reference of {wl.name} at {shape}")
            self.prepared = {n: Prepared(r, tol) for n, r in self.reference.items()}
            _trim()
        return self.reference


_BASES: dict[tuple, Base] = {}


def base_set(wl: Workload, shape: Shape, distribution: str, index: int = 0) -> Base:
    key = (wl.name, shape.label(), distribution, index)
    hit = _BASES.pop(key, None)
    if hit is not None and hit.wl is not wl:
        hit = None      # another workload of the same name (a re-import, a fusion group in memory)
    if hit is None:
        seed = (_PROCESS_SEED + 7919 * index) % (1 << 62)

        def draw() -> dict:
            inputs, scalars = _split(wl.make_inputs(shape, distribution, seed))
            return {**{f"in:{n}": v for n, v in inputs.items()}, **{f"sc:{n}": v for n, v in scalars.items()}}
        got = build.in_child(draw, budget=build.budget_for(footprint_bytes(wl, shape)),
                             what=f"the inputs of {wl.name} at {shape} ({distribution})")
        hit = Base(wl, shape, distribution, {n[3:]: v for n, v in got.items() if n.startswith("in:")},
                   {n[3:]: v for n, v in got.items() if n.startswith("sc:")})
    _BASES[key] = hit   # most recently used last
    _trim()
    return hit


def sensitivity(wl: Workload, case: Case) -> dict:
    """``wl.sensitivity`` of the case's own data (kernels.spec.Workload.sensitivity), by output
    name, computed once per case in a memory-limited child like its reference ({} where the
    workload does not know it)."""
    if wl.sensitivity is None:
        return {}
    if case.sensitivity is None:
        data = case.view.base if case.view is not None else case
        feeds, shape = {**data.inputs, **data.scalars}, case.shape
        case.sensitivity = build.in_child(lambda: {n: float(v) for n, v in wl.sensitivity(feeds, shape).items()},
                                          budget=build.budget_for(2 * footprint_bytes(wl, shape)),
                                          what=f"the float32 sensitivity of {wl.name} at {shape}")
    return case.sensitivity


def _trim() -> None:
    while len(_BASES) > 1 and sum(b.nbytes() for b in _BASES.values()) > BASE_CACHE_BYTES:
        _BASES.pop(next(iter(_BASES)))


def forget_bases() -> None:
    _BASES.clear()


# --------------------------------------------------------------------------- views

def can_reorder(wl: Workload, shape: Shape) -> bool:
    return any(shape[d] >= 2 for d in wl.independent)


class View:
    """A base set as presented to the kernel: reordered along the independent dims by ``perm``
    (dim → index array: position i holds the base's index perm[i])."""

    def __init__(self, base: Base, perm: dict[str, np.ndarray]):
        self.base = base
        self.perm = perm

    @classmethod
    def identity(cls, base: Base) -> "View":
        wl, shape = base.wl, base.shape
        return cls(base, {d: np.arange(shape[d]) for d in wl.independent})

    def shuffled(self, rng: np.random.Generator, fraction: float = 1.0) -> "View":
        """A new view: each independent dim's order shuffled again over ``fraction`` of its
        positions (all of them for a full reshuffle)."""
        perm = {}
        for d, p in self.perm.items():
            p = p.copy()
            n = len(p)
            if n >= 2:
                k = n if fraction >= 1.0 else max(2, int(round(n * fraction)))
                if k < n:
                    # a cycle through k secret positions: every one of them really moves
                    where = rng.choice(n, size=k, replace=False)
                    p[where] = np.roll(p[where], 1)
                else:
                    p = p[rng.permutation(n)]
            perm[d] = p
        return View(self.base, perm)

    def changed(self, other: "View") -> dict[str, np.ndarray]:
        """Positions (per dim) whose base index differs from ``other``'s."""
        return {d: np.nonzero(p != other.perm[d])[0] for d, p in self.perm.items()}

    def write_inputs(self, into: dict[str, np.ndarray], since: "View | None" = None) -> None:
        """Write this view's inputs into the arena arrays ``into`` (only what changed since ``since``)."""
        wl = self.base.wl
        for name, src in self.base.inputs.items():
            arg_dims = wl.arg(name).dims
            dst = into[name]
            axes = [(ax, d) for ax, d in enumerate(arg_dims) if d in self.perm]
            if not axes:
                if since is None:
                    np.copyto(dst, src)
                continue
            if since is not None and len(axes) == 1:
                ax, d = axes[0]
                rows = np.nonzero(self.perm[d] != since.perm[d])[0]
                if len(rows) == 0:
                    continue
                idx = [slice(None)] * src.ndim
                idx[ax] = rows
                dst[tuple(idx)] = np.take(src, self.perm[d][rows], axis=ax)
                continue
            out = src
            for ax, d in axes:
                out = np.take(out, self.perm[d], axis=ax)
            np.copyto(dst, out)

    def expected(self, name: str, tol: Tolerance, positions: dict[str, np.ndarray] | None = None) -> np.ndarray:
        """The float64 reference of output ``name`` as this view presents it, at ``positions``
        (per independent dim; None: everywhere). Gathered from the base's reference when it is
        known; otherwise the reference is run on the matching slice of the base's inputs."""
        base, wl = self.base, self.base.wl
        out_dims = wl.arg(name).dims
        pos = positions or {d: np.arange(len(p)) for d, p in self.perm.items()}
        picks = {d: self.perm[d][pos[d]] for d in pos}
        if base.reference is None and positions:
            return _slice_reference(base, picks)[name]
        ref = base.full_reference(tol)[name]
        for ax, d in enumerate(out_dims):
            if d in picks:
                ref = np.take(ref, picks[d], axis=ax)
        return ref

    def presented(self, name: str, out: np.ndarray, positions: dict[str, np.ndarray]) -> np.ndarray:
        """The part of an output array at ``positions`` (per independent dim)."""
        arr = out
        for ax, d in enumerate(self.base.wl.arg(name).dims):
            if d in positions:
                arr = np.take(arr, positions[d], axis=ax)
        return arr


def _slice_reference(base: Base, picks: dict[str, np.ndarray]) -> dict:
    wl = base.wl
    shape = Shape(tuple((d, len(picks[d]) if d in picks else v) for d, v in base.shape.dims))

    def ref() -> dict:
        inputs = {}
        for name, arr in base.inputs.items():
            for ax, d in enumerate(wl.arg(name).dims):
                if d in picks:
                    arr = np.take(arr, picks[d], axis=ax)
            inputs[name] = np.ascontiguousarray(arr)
        return {n: np.asarray(v) for n, v in wl.reference({**inputs, **base.scalars}, shape).items()}
    return build.in_child(ref, budget=build.budget_for(footprint_bytes(wl, base.shape)),
                          what=f"the float64 reference of {wl.name} on a slice of {base.shape}")


def sample_positions(view: View, rng: np.random.Generator, *, changed: dict | None = None,
                     per_dim: int = 16) -> dict[str, np.ndarray]:
    """A secret sample of positions along each independent dim: some that just changed, some
    anywhere (sorted, unique)."""
    out = {}
    for d, p in view.perm.items():
        n = len(p)
        k = min(n, per_dim)
        pick = set(rng.choice(n, size=k, replace=False).tolist())
        if changed is not None and len(changed.get(d, ())):
            c = changed[d]
            pick |= set(rng.choice(c, size=min(len(c), per_dim), replace=False).tolist())
        out[d] = np.array(sorted(pick), dtype=np.int64)
    return out


def out_shapes(wl: Workload, shape: Shape) -> dict:
    return {n: tuple(int(v) for v in s) for n, s in wl.out_shapes(shape).items()}
