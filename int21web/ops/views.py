"""The own-ops pages: import (preview first, then store), the problem page."""
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render

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
    return render(request, "ops/engine.html", ctx)
