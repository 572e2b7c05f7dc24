"""Pages for goals and runs. Thin: parse → one service or selector call → render."""
from django.contrib import messages
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from int21web.accounts.roles import has_role, role_required
from int21web.runs import forms, selectors, services
from int21web.runs import models as m
from int21web.runs.store import goal_from
from swarm.goals import GoalError
from swarm.guidance import OPS, GuidanceError


@role_required("viewer")
def dashboard(request):
    return render(request, "runs/dashboard.html", selectors.dashboard())


# ----------------------------------------------------------------------------- goals

@role_required("viewer")
def goal_list(request):
    from django.contrib.auth import get_user_model

    from kernels import targets, workloads
    filters = selectors.goal_filters(request.GET)
    owners = get_user_model().objects.filter(goal__isnull=False).distinct().order_by("username")
    return render(request, "runs/goal_list.html", {
        "goals": selectors.goals(**filters), "filters": filters, "workloads": workloads.names(),
        "targets": targets.names(), "owners": owners.values_list("username", flat=True)})


@require_POST
@role_required("engineer", "archiving a goal")
def goal_archive(request, goal_id):
    row = get_object_or_404(m.Goal, pk=goal_id)
    restore = request.POST.get("restore") == "1"
    services.goal_archive(goal_row=row, archived=not restore)
    messages.success(request, f"Goal “{row.name}” {'restored' if restore else 'archived'}.")
    return redirect("goal", goal_id=row.id)


@require_POST
@role_required("engineer", "deleting a goal")
def goal_delete(request, goal_id):
    row = get_object_or_404(m.Goal, pk=goal_id)
    try:
        services.goal_delete(goal_row=row)
    except ValueError as exc:
        messages.error(request, str(exc))
        return redirect("goal", goal_id=row.id)
    messages.success(request, f"Goal “{row.name}” deleted.")
    return redirect("goals")


@role_required("viewer")
def goal_detail(request, goal_id):
    row = get_object_or_404(m.Goal, pk=goal_id)
    return render(request, "runs/goal_detail.html", selectors.goal_page(row))


def _editor(request, *, row=None, data=None, errors=None, info=None, status=200, workload=None):
    if data is not None:
        form = forms.GoalForm(data)
        workload, target = data.get("workload", ""), data.get("target", "")
        space = forms.space_rows(data)
        space = None if space is None else {"params": [r for _, r in space["params"]],
                                            "constraints": [r for _, r in space["constraints"]]}
    else:
        goal = goal_from(row.spec) if row else goal_from({"workload": workload or "softmax", "target": "cpu",
                                                          "budget": {"evaluations": 50}})
        initial = forms.initial_from(row.name if row else "", goal, row.required_approvals if row else 1)
        form = forms.GoalForm(initial=initial)
        workload, target, space = goal.workload, goal.target, goal.space
    from int21web.runs.llm import llm_status
    return render(request, "runs/goal_edit.html", {
        "form": form, "row": row, "errors": errors or {}, "info": info or {}, "llm": llm_status(),
        "llm_fields": [f for f in forms.GoalForm.base_fields if f.startswith("llm_")],
        "space": forms.editor_rows(workload, target, space)}, status=status)


@role_required("engineer", "writing a goal")
def goal_new(request):
    if request.method != "POST":
        source = m.Goal.objects.filter(pk=request.GET.get("from")).first() if request.GET.get("from") else None
        from kernels import workloads
        asked = request.GET.get("workload", "")
        return _editor(request, row=source, workload=asked if asked in workloads.names() else None)
    return _save(request, None)


@role_required("engineer", "editing a goal")
def goal_edit(request, goal_id):
    row = get_object_or_404(m.Goal, pk=goal_id)
    if request.method != "POST":
        return _editor(request, row=row)
    return _save(request, row)


def _save(request, row):
    goal, errors, info = forms.validate_goal(request.POST)
    if goal is None:
        return _editor(request, row=row, data=request.POST, errors=errors, info=info, status=400)
    saved = services.goal_save(name=request.POST["name"].strip(), goal=goal, owner=request.user,
                               required_approvals=int(request.POST.get("required_approvals") or 1), row=row)
    messages.success(request, f"Goal “{saved.name}” saved.")
    if request.POST.get("then") == "start":
        return _start(request, saved)
    return redirect("goal", goal_id=saved.id)


@require_POST
@role_required("engineer", "checking a goal")
def goal_validate(request):
    """Live validation (htmx): a summary, and the messages by field as JSON, which the editor's
    script puts in the slots the page has (and clears the others)."""
    goal, errors, info = forms.validate_goal(request.POST)
    return render(request, "runs/_validation.html", {"errors": errors, "info": info, "ok": goal is not None})


@role_required("engineer", "editing a goal")
def goal_space_rows(request):
    data = forms.editor_rows(request.GET.get("workload", ""), request.GET.get("target", ""), None)
    return render(request, "runs/_space_editor.html", {"space": data})


@require_POST
@role_required("engineer", "cloning a goal")
def goal_clone(request, goal_id):
    row = get_object_or_404(m.Goal, pk=goal_id)
    copy = services.goal_clone(goal_row=row, owner=request.user)
    messages.success(request, f"Cloned into “{copy.name}”: edit it below.")
    return redirect("goal_edit", goal_id=copy.id)


@require_POST
@role_required("engineer", "starting a run")
def goal_start(request, goal_id):
    return _start(request, get_object_or_404(m.Goal, pk=goal_id))


def _start(request, row):
    try:
        run_id = services.run_launch(goal_row=row, started_by=request.user)
    except GoalError as exc:
        messages.error(request, f"This goal cannot run: {exc}")
        return redirect("goal", goal_id=row.id)
    return redirect("run", run_id=run_id)


# ----------------------------------------------------------------------------- runs

@role_required("viewer")
def run_list(request):
    return render(request, "runs/run_list.html", {"runs": selectors.runs()})


@role_required("viewer")
def run_detail(request, run_id):
    run = get_object_or_404(m.Run.objects.select_related("goal", "started_by"), pk=run_id)
    return render(request, "runs/run_detail.html", {**selectors.run_page(run),
                                                   "can_steer": has_role(request.user, "engineer"),
                                                   "ended": run.state in m.Run.ENDED, "ops": OPS})


@require_POST
@role_required("engineer", "controlling a run")
def run_control(request, run_id, action):
    run = get_object_or_404(m.Run, pk=run_id)
    if action not in services.RUN_ACTIONS:
        raise Http404("no such action")
    htmx = bool(request.headers.get("HX-Request"))
    try:
        services.run_control(run_id=run.id, action=action, user=request.user)
    except services.RunStateError as exc:
        if htmx:
            return render(request, "runs/_control_result.html", {"error": str(exc)}, status=409)
        messages.error(request, str(exc))
        return redirect("run", run_id=run.id)
    if htmx:
        return render(request, "runs/_control_result.html", {"action": action, "run": m.Run.objects.get(pk=run.id)})
    return redirect("run", run_id=run.id)


@require_POST
@role_required("engineer", "posting guidance")
def run_guidance(request, run_id):
    run = get_object_or_404(m.Run, pk=run_id)
    try:
        directive = forms.directive_from(request.POST)
        row = services.guidance_post(run_id=run.id, directive=directive, author=request.user)
    except services.RunStateError as exc:
        return render(request, "runs/_guidance_result.html", {"error": str(exc)}, status=409)
    except GuidanceError as exc:
        return render(request, "runs/_guidance_result.html", {"error": str(exc)}, status=400)
    return render(request, "runs/_guidance_result.html", {"posted": row})
