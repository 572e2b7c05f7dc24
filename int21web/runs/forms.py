"""The goal editor's form: scalar fields through a Django form, the design space as rows
(``space-p-<i>-name|kind|low|high|step|choices`` and ``space-c-<i>-expr|message``); the goal
they make is checked by ``swarm.goals.goal_problems``, as the API and a run's start check it, and
every error is keyed by the form field it belongs to. Also the run page's guidance form, parsed
into a directive (``directive_from``)."""
from __future__ import annotations

import json

from django import forms

from kernels import targets, workloads
from kernels.spec import SpecError
from swarm import registry
from swarm.goals import goal_problems
from swarm.space import goal_space
from swarm.types import Budget, Goal

DEFAULT_TEAM = ["explorer", "mutator", "crossover", "tuner", "variant", "seeded"]


class GoalForm(forms.Form):
    name = forms.CharField(max_length=200)
    workload = forms.ChoiceField(choices=[])
    target = forms.ChoiceField(choices=[])
    shapes = forms.CharField(required=False, help_text="shapes that count, comma-separated (the first is timed); "
                                                       "empty: the workload's typical shape")
    held_out = forms.CharField(required=False, help_text="checked before promotion, never searched on")
    metric = forms.ChoiceField(choices=[("speedup", "speedup vs the strongest baseline"), ("time", "time")])
    atol = forms.FloatField(required=False, min_value=0, help_text="empty: the workload's tolerance")
    rtol = forms.FloatField(required=False, min_value=0)
    evaluations = forms.IntegerField(min_value=1, max_value=10000, initial=50)
    wall_seconds = forms.FloatField(required=False, min_value=1)
    target_speedup = forms.FloatField(required=False, min_value=0.01)
    stagnation = forms.IntegerField(required=False, min_value=1, max_value=1000, initial=10)
    population = forms.IntegerField(min_value=1, max_value=64, initial=8)
    team = forms.MultipleChoiceField(choices=[], widget=forms.CheckboxSelectMultiple)
    seed = forms.IntegerField(initial=0, min_value=0)
    cold = forms.BooleanField(required=False, help_text="ignore lessons of earlier runs")
    required_approvals = forms.IntegerField(min_value=1, max_value=10, initial=1)
    eval_settings = forms.CharField(required=False, max_length=2000, widget=forms.Textarea(attrs={"rows": 2}),
                                    help_text='harness settings as JSON, which may only tighten the defaults, '
                                              'e.g. {"seeds": 8, "min_calls": 40} (docs/harness.md)')
    # The language model for llm_coder / llm_analyst (docs/agents.md); empty: the server's
    # LLM_* settings. The API key never goes here: it stays in the server's environment.
    llm_provider = forms.ChoiceField(required=False, choices=[("", "server default"), ("openai", "OpenAI-compatible"),
                                                              ("ollama", "Ollama")])
    llm_model = forms.CharField(required=False, max_length=200)
    llm_base_url = forms.CharField(required=False, max_length=500)
    llm_temperature = forms.FloatField(required=False)
    llm_max_tokens = forms.IntegerField(required=False)
    llm_budget_requests = forms.IntegerField(required=False)
    llm_budget_tokens = forms.IntegerField(required=False)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["workload"].choices = [(n, n) for n in workloads.names()]
        self.fields["target"].choices = [(n, n) for n in targets.names()]
        self.fields["team"].choices = [(a, a) for a in registry.AGENTS]


def _shapes(text: str) -> list[str]:
    return [s.strip() for s in (text or "").replace(";", ",").split(",") if s.strip()]


def space_rows(data) -> dict | None:
    """The design-space rows of a POST as ``Goal.space`` JSON (None when the editor was not used)."""
    if data.get("space-used") != "1":
        return None
    params, constraints = [], []
    i = 0
    while f"space-p-{i}-name" in data:
        if data.get(f"space-p-{i}-name", "").strip():
            row = {"name": data[f"space-p-{i}-name"].strip(), "kind": data.get(f"space-p-{i}-kind", "int")}
            for key in ("low", "high", "step"):
                if data.get(f"space-p-{i}-{key}", "").strip():
                    row[key] = data[f"space-p-{i}-{key}"].strip()
            if data.get(f"space-p-{i}-choices", "").strip():
                row["choices"] = data[f"space-p-{i}-choices"]
            params.append((i, row))
        i += 1
    i = 0
    while f"space-c-{i}-expr" in data:
        expr = data.get(f"space-c-{i}-expr", "").strip()
        if expr:
            constraints.append((i, {"expr": expr, "message": data.get(f"space-c-{i}-message", "").strip()}))
        i += 1
    return {"params": params, "constraints": constraints}


# Goal paths (swarm.goals) whose form field is named differently.
_FIELD_OF = {"budget.evaluations": "evaluations", "budget.wall_seconds": "wall_seconds",
             "budget.target_speedup": "target_speedup", "budget.stagnation_generations": "stagnation"}


def form_field(path: str, rows: dict | None, fields) -> str:
    """The form field where the problem of a goal path (``swarm.goals.goal_problems``) is shown:
    ``space.params.2.high`` (index among the filled rows) → ``space-p-<row>-high`` (the form's
    row), ``llm.budget.requests`` → ``llm_budget_requests``, ``budget.evaluations`` →
    ``evaluations``; a path with no field of its own → ``goal``."""
    parts = path.split(".")
    if parts[0] == "space":
        return _space_field(parts[1:], rows)
    if parts[0] == "llm":
        name = "_".join(parts)
        return name if name in fields else "llm"
    name = _FIELD_OF.get(path, parts[0])
    return name if name in fields else "goal"


def _space_field(parts: list[str], rows: dict | None) -> str:
    if rows is None:
        return "space"
    if parts[:1] in (["params"], ["constraints"]) and len(parts) >= 2 and parts[1].isdigit():
        kind = "p" if parts[0] == "params" else "c"
        row = rows[parts[0]][int(parts[1])][0]
        return f"space-{kind}-{row}-{parts[2] if len(parts) > 2 else ('name' if kind == 'p' else 'expr')}"
    if parts == ["constraints"] and rows["constraints"]:
        return f"space-c-{rows['constraints'][-1][0]}-expr"    # the impossible set: shown at the last one
    return "space"


def validate_goal(data) -> tuple[Goal | None, dict, dict]:
    """(goal or None, errors {field: message}, info {space_size, …}) for a POSTed goal form:
    the form's own parsing, then every problem ``swarm.goals.goal_problems`` finds in the goal
    (the same checks, in the same words, as the API and a run's start), each next to its field."""
    form = GoalForm(data)
    errors: dict[str, str] = {}
    info: dict = {}
    if not form.is_valid():
        errors.update({("goal" if k == "__all__" else k): " ".join(v) for k, v in form.errors.items()})
    c = form.cleaned_data
    workload, target = c.get("workload"), c.get("target")
    if not workload or not target:
        return None, errors, info
    wl = workloads.get(workload)
    rows = space_rows(data)
    space_json = None
    if rows is not None:
        space_json = {"params": [r for _, r in rows["params"]], "constraints": [r for _, r in rows["constraints"]]}
    tolerance = None
    if c.get("atol") is not None or c.get("rtol") is not None:
        tolerance = {"atol": c["atol"] if c.get("atol") is not None else wl.tolerance.atol,
                     "rtol": c["rtol"] if c.get("rtol") is not None else wl.tolerance.rtol}
    llm = {k: c[f"llm_{k}"] for k in ("provider", "model", "base_url", "temperature", "max_tokens")
           if c.get(f"llm_{k}") not in (None, "")}
    budget = {k: c[f"llm_budget_{k}"] for k in ("requests", "tokens") if c.get(f"llm_budget_{k}") is not None}
    if budget:
        llm["budget"] = budget
    eval_settings = _json_object(data.get("eval_settings", ""), errors)
    # A field the form itself refused stands in for its default here: its own error is shown.
    goal = Goal(workload=workload, target=target, shapes=_shapes(data.get("shapes", "")),
                held_out=_shapes(data.get("held_out", "")), metric=c.get("metric") or "speedup",
                budget=Budget(evaluations=c.get("evaluations") or 1, wall_seconds=c.get("wall_seconds"),
                              target_speedup=c.get("target_speedup"), stagnation_generations=c.get("stagnation")),
                team=list(c.get("team") or []), population=c.get("population") or 1, seed=c.get("seed") or 0,
                cold=bool(c.get("cold")), tolerance=tolerance, space=space_json, llm=llm,
                eval_settings=eval_settings)
    problems = goal_problems(goal)
    for path, message in problems:
        if path.startswith("eval_settings."):     # one field holds every key: say which
            message = f"{path.split('.', 1)[1]}: {message}"
        errors.setdefault(form_field(path, rows, form.fields), message)
    if not any(path.split(".")[0] in ("target", "space") for path, _ in problems):
        info["space_size"] = _space_size(goal, wl)
    if errors:
        return None, errors, info
    return goal, errors, info


def eval_settings_from_text(text: str) -> dict:
    """Evaluation settings as a user types them (the goal editor, ``manage.py swarm
    --eval-settings``): empty, or a JSON object; else ValueError with what is wrong."""
    if not (text or "").strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    if not isinstance(value, dict):
        raise ValueError('must be a JSON object of settings, e.g. {"seeds": 8}')
    return value


def _json_object(text: str, errors: dict) -> dict:
    """The editor's evaluation settings: empty, or a JSON object (else an error on the field)."""
    try:
        return eval_settings_from_text(text)
    except ValueError as exc:
        errors["eval_settings"] = str(exc)
        return {}


def _space_size(goal: Goal, wl) -> int:
    """Points of the space the goal searches (checked against the shapes that parse)."""
    shapes = []
    for text in goal.shapes:
        try:
            shapes.append(wl.shape_from_text(text))
        except SpecError:
            pass
    return goal_space(goal, wl, wl.template(goal.target), shapes or wl.goal_shapes()).size()


def initial_from(name: str, goal: Goal, required_approvals: int = 1) -> dict:
    tol = goal.tolerance or {}
    return {"name": name, "workload": goal.workload, "target": goal.target, "shapes": ", ".join(goal.shapes),
            "held_out": ", ".join(goal.held_out), "metric": goal.metric, "atol": tol.get("atol"),
            "rtol": tol.get("rtol"), "evaluations": goal.budget.evaluations, "wall_seconds": goal.budget.wall_seconds,
            "target_speedup": goal.budget.target_speedup, "stagnation": goal.budget.stagnation_generations,
            "population": goal.population, "team": goal.team, "seed": goal.seed, "cold": goal.cold,
            "required_approvals": required_approvals,
            "eval_settings": json.dumps(goal.eval_settings) if goal.eval_settings else "",
            **{f"llm_{k}": v for k, v in (goal.llm or {}).items() if k != "budget"},
            **{f"llm_budget_{k}": v for k, v in ((goal.llm or {}).get("budget") or {}).items()}}


def editor_rows(workload: str, target: str, space: dict | None) -> dict:
    """Rows for the design-space editor: the goal's own space, else the template's."""
    try:
        tpl = workloads.get(workload).template(target)
    except SpecError:
        return {"params": [], "constraints": [], "template": None, "dims": []}
    dims = list(workloads.get(workload).shapes.typical[0].as_dict())
    if space:
        params = [dict(p) for p in space.get("params", [])]
        constraints = [dict(c) for c in space.get("constraints", [])]
    else:
        params = [p.to_json() for p in tpl.space.params]
        constraints = []
    for p in params:
        if isinstance(p.get("choices"), (list, tuple)):
            p["choices"] = ", ".join(map(str, p["choices"]))
    return {"params": params, "constraints": constraints, "template": tpl.space.to_json(), "dims": dims,
            "kinds": ["int", "choice", "bool", "variant"], "example": _example_constraint(dims, tpl.space.params)}


def _example_constraint(dims: list, params) -> str:
    """A constraint in this workload's own names: its innermost dim in whole steps of a numeric
    param (the vector width where it has one)."""
    numeric = [p.name for p in params if p.kind == "int"
               or (p.kind == "choice" and all(isinstance(v, int) and not isinstance(v, bool) for v in p.choices))]
    tiles = [n for n in numeric if n != "THREADS"] or numeric
    name = "VEC" if "VEC" in numeric else (tiles[0] if tiles else "")
    if not dims or not name:
        return ""
    return f"{dims[-1]} % {name} == 0"


# --------------------------------------------------------------------------- guidance

def _value(text: str):
    text = (text or "").strip()
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


def directive_from(data) -> dict:
    """The guidance form's fields as a directive (``swarm.guidance.validate`` checks it, through the
    service)."""
    op = data.get("op", "")
    d: dict = {"op": op}
    if op in ("pin", "forbid"):
        d.update(param=data.get("param", "").strip(), value=_value(data.get("value", "")))
    elif op == "narrow":
        d.update(param=data.get("param", "").strip(),
                 values=[_value(v) for v in data.get("value", "").split(",") if v.strip()])
    elif op in ("favour", "mute"):
        d["agent"] = data.get("agent", "").strip()
    elif op == "target":
        d["speedup"] = _value(data.get("value", ""))
    elif op == "note":
        d["text"] = data.get("text", "").strip()
    if data.get("text", "").strip() and op != "note":
        d["note"] = data["text"].strip()[:500]
    return d
