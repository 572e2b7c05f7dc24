"""The own-ops pages: import (preview first, then store), the problem page."""
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from int21web.accounts.roles import has_role, role_required
from int21web.ops import selectors, services
from int21web.ops.forms import ImportForm


@role_required("engineer")
def import_page(request):
    form = ImportForm(request.POST or None, request.FILES or None)
    context = {"form": form, "preview": None}
    if request.method == "POST" and form.is_valid():
        try:
            source = form.problem_source()
            overrides = services.parse_overrides((form.cleaned_data.get("shapes") or "").splitlines())
            if request.POST.get("action") == "import":
                row = services.op_import(source=source, name=form.cleaned_data.get("name"), overrides=overrides,
                                         user=request.user)
                return redirect("op", name=row.name)
            context["preview"] = services.op_preview(source=source, overrides=overrides)
            context["source"] = source
        except services.ImportRefused as exc:
            field = exc.field if exc.field in form.fields else None
            form.add_error(field, exc.message)
            context["failure"] = exc.failure
        except Exception as exc:   # a bad file given as the upload, or the like
            form.add_error("file", str(exc))
    status = 400 if request.method == "POST" and form.errors else 200
    return render(request, "ops/import.html", context, status=status)


@login_required
def problem(request, name):
    ctx = selectors.problem_page(name)
    ctx["can_start"] = has_role(request.user, "engineer")
    return render(request, "ops/problem.html", ctx)


@login_required
def problem_list(request):
    return render(request, "ops/list.html", {"problems": selectors.problems(),
                                             "can_import": has_role(request.user, "engineer")})


@login_required
def engine_list(request):
    return render(request, "ops/engines.html", {"engines": selectors.engines()})


@login_required
def engine(request, name):
    from int21web.library.selectors import engine_gate_for
    ctx = selectors.engine_page(name)
    ctx["can_start"] = has_role(request.user, "engineer")
    ctx["gate"] = engine_gate_for(ctx["engine"])
    ctx["jobs"] = list(ctx["engine"].jobs.select_related("created_by")[:10])
    return render(request, "ops/engine.html", ctx)


_JOB_INTS = ("seeds", "budget", "tune")
_JOB_BOOLS = ("quick",)


@require_POST
@role_required("engineer", "starting an engine job")
def engine_job(request, name):
    """The engine page's Check / Greedy / Run / Breakdown: the API's jobs, through the same service;
    a refusal is a message on the page, never an error page."""
    from django.contrib import messages

    from int21web.ops import jobs
    action = request.POST.get("action", "")
    options = {}
    try:
        for key in _JOB_INTS:
            text = (request.POST.get(key) or "").strip()
            if text:
                try:
                    options[key] = int(text)
                except ValueError:
                    raise jobs.JobRefused(f"{key} must be a whole number, not {text[:20]!r}", field=key) from None
        for key in _JOB_BOOLS:
            if request.POST.get(key):
                options[key] = True
        phase = request.POST.get("phase") or None
        if phase:
            options["phase"] = phase
        job = jobs.job_start(name=name, action=action, options=options, user=request.user)
    except jobs.JobRefused as exc:
        if exc.status == 404:
            raise Http404(exc.message) from None
        messages.error(request, f"{action or 'The job'} not started: {exc.message}")
    else:
        messages.success(request, f"Job #{job.id} ({action}) queued: the Jobs list below shows how it goes.")
    return redirect("engine", name=name)
