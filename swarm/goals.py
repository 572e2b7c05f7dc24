"""What is wrong with a goal, said once.

``goal_problems(goal)`` lists every problem as ``(field, message)``, the field a dotted path
into the goal's JSON (``shapes``, ``budget.evaluations``, ``space.params.1.high``,
``llm.temperature``). The goal editor puts each message next to the form field of that path,
the API answers with the path, and ``check_goal`` (a run's start, a goal's save) raises the
first as a :class:`GoalError`: one set of checks, one wording, wherever a goal is written.
"""
from __future__ import annotations

from kernels import workloads
from kernels.harness.settings import SettingsError, from_goal
from kernels.limits import shape_problem
from kernels.spec import Shape, SpecError, Tolerance
from swarm import registry
from swarm.llm.config import goal_llm_problems
from swarm.space import SpaceError, goal_space
from swarm.types import Goal


class GoalError(ValueError):
    """A goal that cannot run: ``field`` is the dotted path of the part at fault, ``message``
    says why; ``str()`` is ``"<field>: <message>"``."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field, self.message = field, message


def check_goal(goal: Goal) -> None:
    """Raise the goal's first problem as a GoalError; return when it can run."""
    problems = goal_problems(goal)
    if problems:
        raise GoalError(*problems[0])


def goal_problems(goal: Goal) -> list[tuple[str, str]]:
    """Every problem of the goal, in the order a person would fix them (empty: it can run).
    An unknown workload, or a target it has no kernels for, is the only problem listed, since
    nothing else can be checked without them; a malformed shape leaves the space to be checked
    against the shapes that parse."""
    try:
        wl = workloads.get(goal.workload)
    except SpecError as exc:
        return [("workload", str(exc))]
    try:
        tpl = wl.template(goal.target)
    except SpecError as exc:
        return [("target", str(exc))]
    problems: list[tuple[str, str]] = []
    shapes = _shapes(wl, goal.shapes, "shapes", problems)
    problems += goal_llm_problems(goal.llm)
    for name in goal.team:
        try:
            registry.get(name)
        except registry.UnknownAgent as exc:
            problems.append(("team", str(exc)))
    if not goal.team:
        problems.append(("team", "a run needs at least one agent"))
    if goal.budget.evaluations < 1:
        problems.append(("budget.evaluations", "must be at least 1"))
    if goal.population < 1:
        problems.append(("population", "must be at least 1"))
    if not isinstance(goal.confirm_top, int) or isinstance(goal.confirm_top, bool) or goal.confirm_top < 0:
        problems.append(("confirm_top", "a whole number of candidates, 0 or more (0: no re-measurement)"))
    _shapes(wl, goal.held_out, "held_out", problems)
    space = None
    try:
        space = goal_space(goal, wl, tpl, shapes or wl.goal_shapes())
    except SpaceError as exc:
        problems.append(("space" if exc.field == "space" else f"space.{exc.field}", exc.message))
    except SpecError as exc:
        problems.append(("space", str(exc)))
    if goal.tolerance is not None:
        try:
            Tolerance(**goal.tolerance)
        except TypeError as exc:
            problems.append(("tolerance", str(exc)))
    try:
        from_goal(goal.eval_settings, workload=wl, target=goal.target)
    except SettingsError as exc:
        problems.append((f"eval_settings.{exc.key}" if not exc.key.startswith("eval_settings") else exc.key,
                         exc.message))
    if space is not None:
        for k, v in goal.pins.items():
            if k not in space.names or space.param(k).check(v):
                problems.append(("pins", f"{k}={v!r} is not a legal value of the design space"))
    return problems


def _shapes(wl, texts, field: str, problems: list) -> list[Shape]:
    """The shapes among ``texts`` that parse; each one that does not is a problem of ``field``."""
    parsed = []
    for text in texts:
        try:
            shape = wl.shape_from_text(text)
        except SpecError as exc:
            problems.append((field, str(exc)))
            continue
        too_large = shape_problem(wl, shape)     # refused before any work (and any memory) is spent
        if too_large:
            problems.append((field, too_large))
        else:
            parsed.append(shape)
    return parsed
