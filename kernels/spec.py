"""The vocabulary of the kernel world: workloads, their kernel ABI, design spaces, tolerances.

Framework-free: nothing here imports Django. A workload is one folder under
``kernels/workloads/`` whose ``__init__.py`` builds a :class:`Workload`.
"""
from __future__ import annotations

import ast
import functools
import itertools
import math
import operator
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, Mapping

import numpy as np


class SpecError(ValueError):
    """A design space, constraint or parameter set that cannot be used; the message says why."""


# --------------------------------------------------------------------------- kernel ABI

ARG_KINDS = ("in", "out", "dim", "f32")


@dataclass(frozen=True)
class Arg:
    """One argument of the kernel entry point, in call order.

    ``in``/``out`` are float32 buffers (``const float *`` / ``float *``), ``dim`` is an
    ``int64_t`` taken from the shape, ``f32`` is a ``float`` scalar taken from the inputs.
    ``dims`` names each axis of a buffer by the shape dim it runs along (``("rows", "cols")``),
    which is how the harness slices and reorders data along a workload's independent dims.
    """

    name: str
    kind: str
    dims: tuple[str, ...] = ()

    def __post_init__(self):
        if self.kind not in ARG_KINDS:
            raise SpecError(f"argument {self.name!r}: kind must be one of {ARG_KINDS}")

    def c_decl(self) -> str:
        return {
            "in": f"const float *{self.name}",
            "out": f"float *{self.name}",
            "dim": f"int64_t {self.name}",
            "f32": f"float {self.name}",
        }[self.kind]


def c_signature(args: Iterable[Arg], name: str = "kernel") -> str:
    return f"void {name}({', '.join(a.c_decl() for a in args)})"


# --------------------------------------------------------------------------- shapes

@dataclass(frozen=True)
class Shape:
    """Named problem dimensions, e.g. ``Shape.of(rows=4096, cols=4096)``."""

    dims: tuple[tuple[str, int], ...]

    @classmethod
    def of(cls, **dims: int) -> "Shape":
        return cls(tuple((k, int(v)) for k, v in dims.items()))

    def __getitem__(self, key: str) -> int:
        for k, v in self.dims:
            if k == key:
                return v
        raise KeyError(key)

    def as_dict(self) -> dict[str, int]:
        return dict(self.dims)

    def label(self) -> str:
        return "x".join(str(v) for _, v in self.dims)

    def __str__(self) -> str:
        return self.label()


@dataclass(frozen=True)
class ShapeSets:
    """Shapes a workload is checked on. ``typical`` is also what is timed by default."""

    typical: tuple[Shape, ...]
    awkward: tuple[Shape, ...]
    minimal: tuple[Shape, ...]
    held_out: tuple[Shape, ...] = ()
    aligned: tuple[Shape, ...] = ()     # multiples of 16 and 64: the vector fast paths' shapes

    def correctness(self) -> list[tuple[str, Shape]]:
        return ([("awkward", s) for s in self.awkward] + [("aligned", s) for s in self.aligned]
                + [("minimal", s) for s in self.minimal])


# --------------------------------------------------------------------------- tolerance

@dataclass(frozen=True)
class Tolerance:
    """``|out - ref| <= atol + rtol * |ref|`` elementwise, or a relative-RMSE bound."""

    atol: float = 1e-4
    rtol: float = 1e-4
    rel_rmse: float | None = None

    def describe(self) -> str:
        if self.rel_rmse is not None:
            return f"relative RMSE <= {self.rel_rmse:g}"
        return f"atol {self.atol:g}, rtol {self.rtol:g}"


# --------------------------------------------------------------------------- design space

PARAM_KINDS = ("int", "choice", "bool", "variant")


@dataclass(frozen=True)
class Param:
    """A typed knob. ``int``: low..high (step); ``choice``: listed ints; ``bool``: 0/1;
    ``variant``: an algorithm template, chosen by name (the value is the template key)."""

    name: str
    kind: str
    low: int = 0
    high: int = 0
    step: int = 1
    choices: tuple = ()
    default: object = None
    help: str = ""
    # where the knob has any effect, as a constraint expression over the other params
    # ("G3_ALGO == 1": a packed GEMM's micro-tile rows mean nothing to its dot tiles); empty:
    # everywhere. Searches that move one knob at a time skip it where it is dead.
    when: str = ""

    def __post_init__(self):
        if not self.name.isidentifier() or not self.name.isupper():
            raise SpecError(f"param {self.name!r}: names are UPPER_CASE identifiers (they become C macros)")
        if self.kind not in PARAM_KINDS:
            raise SpecError(f"param {self.name}: kind must be one of {PARAM_KINDS}")
        if self.kind == "int" and (self.high < self.low or self.step < 1):
            raise SpecError(f"param {self.name}: empty range {self.low}..{self.high} step {self.step}")
        if self.kind in ("choice", "variant") and not self.choices:
            raise SpecError(f"param {self.name}: a {self.kind} needs at least one choice")
        if self.when:
            _condition(self.when)   # parsed now (and kept): a malformed condition is the space's error, not the search's

    def values(self) -> list:
        if self.kind == "int":
            return list(range(self.low, self.high + 1, self.step))
        if self.kind == "bool":
            return [0, 1]
        return list(self.choices)

    def default_value(self):
        if self.default is not None:
            return self.default
        return self.values()[0]

    def check(self, value) -> str | None:
        if self.kind == "variant":
            return None if value in self.choices else f"{self.name} must be one of {list(self.choices)}"
        if isinstance(value, bool) or not isinstance(value, int):
            return f"{self.name} must be an integer, got {value!r}"
        if value not in self.values():
            if self.kind == "int":
                return f"{self.name} must be in {self.low}..{self.high} (step {self.step}), got {value}"
            return f"{self.name} must be one of {self.values()}, got {value}"
        return None

    def to_json(self) -> dict:
        d = {"name": self.name, "kind": self.kind}
        if self.kind == "int":
            d.update(low=self.low, high=self.high, step=self.step)
        elif self.kind in ("choice", "variant"):
            d["choices"] = list(self.choices)
        d["default"] = self.default_value()
        if self.help:
            d["help"] = self.help
        if self.when:
            d["when"] = self.when
        return d

    def live(self, point: Mapping[str, object]) -> bool:
        """Whether this knob has any effect at ``point`` (its ``when`` holds, or it has none)."""
        if not self.when:
            return True
        cond = _condition(self.when)
        return any(n not in point for n in cond.names) or cond.evaluate(point)


_BINOPS = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Div: operator.truediv,
    ast.Pow: operator.pow, ast.BitAnd: operator.and_, ast.BitOr: operator.or_,
}
_CMPOPS = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge, ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}
_FUNCS = {"min": min, "max": max, "abs": abs}
MAX_EXPR_CHARS = 2000
MAX_MAGNITUDE = 1 << 256


class Constraint:
    """A boolean expression over params and shape dims, parsed safely (never ``eval``).

    Grammar: integers, strings, names, ``+ - * / // % ** & |``, comparisons (chained),
    ``and or not``, ``x if c else y``, tuples/lists for ``in``, and ``min max abs``.

    Cost is bounded: arithmetic is on numbers only (no string or sequence repetition), every
    intermediate number stays within ±2^256, ``**`` takes a constant exponent up to 64, and an
    expression is at most 2,000 characters: one evaluation is microseconds, whatever is typed.
    """

    def __init__(self, expr: str, message: str = ""):
        self.expr = expr.strip()
        self.message = message or f"violates {self.expr}"
        if not self.expr:
            raise SpecError("a constraint cannot be empty")
        if len(self.expr) > MAX_EXPR_CHARS:
            raise SpecError(f"a constraint is at most {MAX_EXPR_CHARS} characters (this one has {len(self.expr)})")
        try:
            self._tree = ast.parse(self.expr, mode="eval")
        except SyntaxError as exc:
            raise SpecError(f"constraint {self.expr!r} is not a valid expression: {exc.msg}") from None
        self._check_nodes(self._tree)
        self.names = sorted({n.id for n in ast.walk(self._tree) if isinstance(n, ast.Name)} - set(_FUNCS))

    def _check_nodes(self, tree):
        allowed = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.Name,
                   ast.Load, ast.Constant, ast.IfExp, ast.Tuple, ast.List, ast.Call, ast.And, ast.Or,
                   ast.Not, ast.USub, ast.UAdd, *_BINOPS, *_CMPOPS)
        for node in ast.walk(tree):
            if not isinstance(node, allowed):
                raise SpecError(f"constraint {self.expr!r}: {type(node).__name__} is not allowed")
            if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in _FUNCS
                                                   and not node.keywords):
                raise SpecError(f"constraint {self.expr!r}: only min(), max() and abs() may be called")
            if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float, str)):
                raise SpecError(f"constraint {self.expr!r}: constant {node.value!r} is not allowed")
            if isinstance(node, ast.BinOp) and any(isinstance(side, ast.Constant) and isinstance(side.value, str)
                                                   for side in (node.left, node.right)):
                raise SpecError(f"constraint {self.expr!r}: arithmetic is on numbers only (a string cannot be "
                                "added, repeated or multiplied)")
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
                if not (isinstance(node.right, ast.Constant) and isinstance(node.right.value, int)
                        and 0 <= node.right.value <= 64):
                    raise SpecError(f"constraint {self.expr!r}: ** needs a small constant exponent")

    def evaluate(self, env: Mapping[str, object]) -> bool:
        missing = [n for n in self.names if n not in env]
        if missing:
            raise SpecError(f"constraint {self.expr!r} uses unknown name(s): {', '.join(missing)}")
        try:
            return bool(self._eval(self._tree.body, env))
        except ZeroDivisionError:
            return False
        except SpecError:
            raise
        except (TypeError, OverflowError, MemoryError, RecursionError, ValueError) as exc:
            raise SpecError(f"constraint {self.expr!r}: {type(exc).__name__}: {exc}"[:300]) from None

    def _eval(self, node, env):
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return env[node.id]
        if isinstance(node, (ast.Tuple, ast.List)):
            if len(node.elts) > 256:
                raise SpecError(f"constraint {self.expr!r}: a list of more than 256 values")
            return tuple(self._eval(e, env) for e in node.elts)
        if isinstance(node, ast.UnaryOp):
            v = self._eval(node.operand, env)
            return {ast.Not: lambda x: not x, ast.USub: operator.neg, ast.UAdd: operator.pos}[type(node.op)](v)
        if isinstance(node, ast.BinOp):
            left, right = self._eval(node.left, env), self._eval(node.right, env)
            for v in (left, right):
                if isinstance(v, bool) or not isinstance(v, (int, float)):
                    raise SpecError(f"constraint {self.expr!r}: arithmetic is on numbers only, got {v!r}")
            out = _BINOPS[type(node.op)](left, right)
            if isinstance(out, int) and abs(out) > MAX_MAGNITUDE or \
                    isinstance(out, float) and not (abs(out) <= float(MAX_MAGNITUDE)):
                raise SpecError(f"constraint {self.expr!r}: a number grew past 2^256")
            return out
        if isinstance(node, ast.BoolOp):
            if isinstance(node.op, ast.And):
                return all(self._eval(v, env) for v in node.values)
            return any(self._eval(v, env) for v in node.values)
        if isinstance(node, ast.Compare):
            left = self._eval(node.left, env)
            for op, comp in zip(node.ops, node.comparators):
                right = self._eval(comp, env)
                if not _CMPOPS[type(op)](left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.IfExp):
            return self._eval(node.body if self._eval(node.test, env) else node.orelse, env)
        if isinstance(node, ast.Call):
            return _FUNCS[node.func.id](*(self._eval(a, env) for a in node.args))
        raise SpecError(f"constraint {self.expr!r}: cannot evaluate {type(node).__name__}")

    def to_json(self) -> dict:
        return {"expr": self.expr, "message": self.message}

    def __repr__(self) -> str:
        return f"Constraint({self.expr!r})"


@dataclass(frozen=True)
class DesignSpace:
    """Typed params plus constraints over params and shape dims."""

    params: tuple[Param, ...]
    constraints: tuple[Constraint, ...] = ()

    def __post_init__(self):
        names = [p.name for p in self.params]
        dupes = {n for n in names if names.count(n) > 1}
        if dupes:
            raise SpecError(f"duplicate param name(s): {', '.join(sorted(dupes))}")

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise SpecError(f"unknown param {name!r}; the space has {', '.join(self.names) or 'no params'}")

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.params]

    def size(self) -> int:
        return math.prod(len(p.values()) for p in self.params)

    def default(self) -> dict:
        return {p.name: p.default_value() for p in self.params}

    def violations(self, params: Mapping[str, object], shapes: Iterable[Shape] = ()) -> list[str]:
        """Every reason ``params`` is not a legal point for these shapes (empty list: legal)."""
        problems = []
        unknown = sorted(set(params) - set(self.names))
        if unknown:
            problems.append(f"unknown param(s): {', '.join(unknown)}")
        for p in self.params:
            if p.name not in params:
                problems.append(f"missing param {p.name}")
                continue
            msg = p.check(params[p.name])
            if msg:
                problems.append(msg)
        if problems:
            return problems
        shapes = list(shapes) or [None]
        for c in self.constraints:
            if shapes == [None] and not set(c.names) <= set(self.names):
                continue  # a constraint over shape dims waits until there are shapes
            for shape in shapes:
                env = dict(params)
                if shape is not None:
                    env.update(shape.as_dict())
                if not c.evaluate(env):
                    where = f" at shape {shape}" if shape is not None else ""
                    problems.append(f"{c.message}{where}")
                    break
        return problems

    def points(self, shapes: Iterable[Shape] = ()) -> Iterator[dict]:
        """Every legal point for these shapes, in a fixed order (``size()`` counts the illegal too)."""
        shapes = list(shapes)
        for values in itertools.product(*(p.values() for p in self.params)):
            point = dict(zip(self.names, values))
            if not self.violations(point, shapes):
                yield point

    def sample(self, rng: random.Random, shapes: Iterable[Shape] = (), tries: int = 1000) -> dict | None:
        """A uniformly random legal point (None: none found in ``tries`` draws of a block)."""
        return self.repair({p.name: rng.choice(p.values()) for p in self.params}, rng, shapes, tries)

    def repair(self, point: Mapping[str, object], rng: random.Random, shapes: Iterable[Shape] = (),
               tries: int = 1000) -> dict | None:
        """``point`` made legal by drawing again only the params of its blocks (params linked by
        constraints) that break a constraint; the other blocks keep their values. A generated
        program's space is hundreds of knobs in dozens of independent groups, where drawing the
        whole point again until every group is legal at once would almost never succeed; drawn
        block by block, each block is uniform over its own legal values, so a repaired random
        draw is uniform over the legal points, as whole-point rejection would be. None when a
        block finds no legal values in ``tries`` draws, or a constraint over shape dims alone
        fails."""
        envs = [s.as_dict() for s in shapes] or [None]
        out = {p.name: point.get(p.name, p.default_value()) for p in self.params}
        for c in self._fixed:
            if any(env is not None and not c.evaluate(env) for env in envs):
                return None
        for params, constraints in self._blocks:
            for attempt in range(tries + 1):
                if attempt:
                    out.update({p.name: rng.choice(p.values()) for p in params})
                own = {p.name: out[p.name] for p in params}
                if all(p.check(own[p.name]) is None for p in params) and all(
                        _holds(c, own, env) for c in constraints for env in envs):
                    break
            else:
                return None
        return out

    def neighbours(self, point: Mapping[str, object], shapes: Iterable[Shape] = (),
                   rng: random.Random | None = None, frozen: Iterable[str] = ()) -> list[dict]:
        """The legal points one knob away from ``point``: every other value of each knob that
        is live there (:meth:`Param.live`) and not ``frozen``. Knobs that other knobs' ``when``
        names (an algorithm choice: it decides which knobs matter) come first, in the space's
        order; then every other move, shuffled by ``rng`` (in order without one)."""
        shapes, frozen = list(shapes), set(frozen)
        gating = {n for p in self.params if p.when for n in _condition(p.when).names}
        moves = [(p.name in gating, p.name, v) for p in self.params
                 if p.name not in frozen and p.live(point) for v in p.values() if v != point.get(p.name)]
        first = [m for m in moves if m[0]]
        rest = [m for m in moves if not m[0]]
        if rng is not None:
            rng.shuffle(rest)
        out = []
        for _, name, v in first + rest:
            q = {**point, name: v}
            if not self.violations(q, shapes):
                out.append(q)
        return out

    @functools.cached_property
    def _blocks(self) -> list[tuple[list[Param], list[Constraint]]]:
        """The params split into blocks that no constraint links, each with its constraints."""
        names = set(self.names)
        parent = {n: n for n in names}

        def root(n):
            while parent[n] != n:
                parent[n] = parent[parent[n]]
                n = parent[n]
            return n
        for c in self.constraints:
            linked = [n for n in c.names if n in names]
            for a in linked[1:]:
                parent[root(a)] = root(linked[0])
        blocks: dict[str, tuple[list, list]] = {}
        for p in self.params:
            blocks.setdefault(root(p.name), ([], []))[0].append(p)
        for c in self.constraints:
            linked = [n for n in c.names if n in names]
            if linked:
                blocks[root(linked[0])][1].append(c)
        return list(blocks.values())

    @functools.cached_property
    def _fixed(self) -> list[Constraint]:
        """Constraints over shape dims alone (no param can make them hold)."""
        names = set(self.names)
        return [c for c in self.constraints if not any(n in names for n in c.names)]

    def to_json(self) -> dict:
        return {"params": [p.to_json() for p in self.params],
                "constraints": [c.to_json() for c in self.constraints]}


@functools.lru_cache(maxsize=4096)
def _condition(expr: str) -> Constraint:
    """A param's ``when``, parsed once."""
    return Constraint(expr)


def _holds(c: Constraint, params: dict, shape_env: dict | None) -> bool:
    """One constraint at one shape (None: no shape yet, so one over shape dims waits)."""
    if shape_env is None:
        return not set(c.names) <= set(params) or c.evaluate(params)
    return c.evaluate({**shape_env, **params})


# --------------------------------------------------------------------------- templates, baselines

@dataclass(frozen=True)
class Template:
    """Seed kernel sources for one target. ``variants`` maps a variant name to a source file
    (relative to the workload folder); the ``variant_param`` of the space selects among them."""

    target: str
    variants: Mapping[str, str]
    space: DesignSpace
    variant_param: str | None = None
    folder: Path | None = None
    # CUDA only: (shape, params) -> ((gx, gy, gz), (bx, by, bz), dynamic_shared_bytes)
    launch: Callable[[Shape, Mapping[str, object]], tuple] | None = None

    def variant_of(self, params: Mapping[str, object]) -> str:
        if self.variant_param is None:
            return next(iter(self.variants))
        return str(params.get(self.variant_param, next(iter(self.variants))))

    def source(self, variant: str | None = None) -> str:
        name = variant or next(iter(self.variants))
        if name not in self.variants:
            raise SpecError(f"unknown variant {name!r}; choose from {', '.join(self.variants)}")
        return (self.folder / self.variants[name]).read_text()

    def seeds(self) -> list[tuple[str, dict]]:
        """One (source, params) seed candidate per variant, using the space's defaults."""
        out = []
        for name in self.variants:
            params = self.space.default()
            if self.variant_param:
                params[self.variant_param] = name
            out.append((self.source(name), params))
        return out


@dataclass(frozen=True)
class Baseline:
    """What an engineer would use instead; timed against the candidate inside the same child.

    ``fn`` is ``"module:factory"``; ``factory(inputs, outputs, dims, **options) -> callable``
    (``dims``: the shape as a name → size dict; ``options``: this baseline's JSON ``options``,
    e.g. where an imported problem is stored) prepares
    once (wraps buffers, compiles) and returns the zero-argument call that is timed; the call
    MUST write the preallocated ``outputs``. ``strong`` marks a baseline an engineer would
    really ship (a speedup above 10x a strong baseline is re-checked). ``default=False``
    baselines (slow to prepare, e.g. torch.compile) run only when a goal asks for them.
    """

    name: str
    fn: str
    strong: bool = False
    requires: str = ""  # importable module needed ("torch"); missing → skipped with a note
    default: bool = True
    description: str = ""
    options: dict = field(default_factory=dict, hash=False, compare=False)  # JSON, passed as **kwargs
    user_code: bool = False   # runs a user's own model: prepared only after its process is isolated


# --------------------------------------------------------------------------- workload

@dataclass
class Workload:
    """A computation the factory can write kernels for. See docs/ARCHITECTURE.md."""

    name: str
    description: str
    args: tuple[Arg, ...]
    shapes: ShapeSets
    distributions: tuple[str, ...]
    tolerance: Tolerance
    make_inputs: Callable[[Shape, str, int], dict]
    reference: Callable[[dict, Shape], dict]
    flops: Callable[[Shape], float]
    bytes_moved: Callable[[Shape], float]
    out_shapes: Callable[[Shape], dict]
    templates: dict[str, Template] = field(default_factory=dict)
    baselines: dict[str, tuple[Baseline, ...]] = field(default_factory=dict)
    deterministic: bool = True
    shape_dims: tuple[str, ...] = ()
    flop_bound: bool = False
    # Shape dims along which every output element depends only on the inputs at the same
    # index (rows of a softmax; m and n of a matmul; batch and heads of attention). The
    # harness reorders timing data along them per call (a cache cannot hit) and checks
    # samples of a large output by running the reference on the matching slice.
    independent: tuple[str, ...] = ()
    # The largest source the static stage accepts for this workload (None: the harness's
    # default, static.MAX_SOURCE_BYTES). Only trusted code sets it: an imported workload from
    # the size of its generated source (a whole model's graph is hundreds of KiB of C).
    max_source_bytes: int | None = None
    # A generated program's fusion groups (summaries: id, family, form, knobs, fuse, signature),
    # for imported workloads; the lessons keyed by group signature read them (swarm/knowledge/groups.py).
    groups: tuple = ()
    # How far a correct float32 implementation may be off on given inputs: ``(feeds, shape) ->
    # {output: relative RMSE}`` (None: not known). The judge consults it only for an output
    # that misses a relative-RMSE tolerance with finite values (kernels/harness/phases.py):
    # an input whose answer swings on float32's rounding (near-ties under a sharp softmax)
    # cannot hold any kernel to the tolerance. Imported workloads set it (kernels/graph/check.py).
    sensitivity: Callable[[dict, Shape], dict] | None = None

    def __post_init__(self):
        if not self.shape_dims:
            self.shape_dims = tuple(a.name for a in self.args if a.kind == "dim")
        for dim in self.independent:
            if dim not in self.shape_dims:
                raise SpecError(f"workload {self.name}: independent dim {dim!r} is not a shape dim")
        unnamed = [a.name for a in self.args if a.kind in ("in", "out") and not a.dims]
        if self.independent and unnamed:
            raise SpecError(f"workload {self.name}: buffers {', '.join(unnamed)} need their axes' dims "
                            "to be sliced along the independent dims")

    def arg(self, name: str) -> Arg:
        for a in self.args:
            if a.name == name:
                return a
        raise SpecError(f"workload {self.name} has no argument {name!r}")

    def signature(self, target: str = "cpu") -> str:
        if target == "cuda":
            return "extern \"C\" __global__ " + c_signature(self.args)
        return c_signature(self.args)

    def shape_from_text(self, text: str) -> Shape:
        """Parse ``4096x4096`` (values in the order of ``shape_dims``)."""
        parts = text.lower().replace("×", "x").split("x")
        if len(parts) != len(self.shape_dims):
            raise SpecError(f"{self.name} shapes have {len(self.shape_dims)} dims "
                            f"({'x'.join(self.shape_dims)}), got {text!r}")
        try:
            values = [int(p) for p in parts]
        except ValueError:
            raise SpecError(f"shape {text!r}: dims must be integers") from None
        if any(v < 1 for v in values):
            raise SpecError(f"shape {text!r}: dims must be >= 1")
        return Shape(tuple(zip(self.shape_dims, values)))

    def goal_shapes(self, texts: Iterable[str] = ()) -> list[Shape]:
        """The shapes a goal names (as text, the first is timed), or else the workload's typical
        shape: what a run searches on, its lessons are keyed by and its space is checked against."""
        return [self.shape_from_text(s) for s in texts] or [self.shapes.typical[0]]

    def template(self, target: str) -> Template:
        try:
            return self.templates[target]
        except KeyError:
            raise SpecError(f"workload {self.name} has no seed kernels for target {target!r}") from None

    def input_names(self) -> list[str]:
        return [a.name for a in self.args if a.kind == "in"]

    def output_names(self) -> list[str]:
        return [a.name for a in self.args if a.kind == "out"]

    def describe(self) -> dict:
        """The workload as JSON for people: ABI, tolerance, shapes, each target's signature and
        design space, baselines (the workloads page, the API's /api/workloads, `manage.py workloads`)."""
        from kernels import targets   # the registry imports the targets, which import this module
        return {
            "name": self.name,
            "description": self.description,
            "args": [{"name": a.name, "kind": a.kind} for a in self.args],
            "tolerance": self.tolerance.describe(),
            "distributions": list(self.distributions),
            # a shape is written as its dims in this order, joined by "x" (shape_from_text)
            "dims": list(self.shape_dims),
            "shapes": {k: [s.label() for s in getattr(self.shapes, k)]
                       for k in ("typical", "awkward", "minimal", "held_out")},
            "targets": {
                name: {"signature": self.signature(name), "variants": list(t.variants),
                       "space": t.space.to_json(), "space_size": t.space.size()}
                for name, t in self.templates.items()
            },
            "baselines": [f"{b.name} ({tname}{', strong' if b.strong else ''}{', opt-in' if not b.default else ''})"
                          for tname, bl in self.baselines.items() for b in bl],
            "available_targets": targets.names(),
        }


def rng_for(seed: int, shape: Shape, distribution: str) -> np.random.Generator:
    """A generator that depends on everything that identifies an input case."""
    key = f"{seed}|{shape.label()}|{distribution}".encode()
    return np.random.default_rng(list(key))
