"""Candidate, review, library and knowledge pages. Thin: parse → one service or selector
call → render or redirect. A refused action is a 403 page naming why; a request the rules
turn down comes back to the page with the message."""
from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from int21web.accounts.roles import RoleError, has_role, role_required
from int21web.library import evidence, selectors, services


def _figure_json(fig):
    return json.dumps(fig) if fig else ""


def _back(request, default: str) -> str:
    """Where a form came from (``next``), if it is a page of this site."""
    target = request.POST.get("next") or ""
    ok = url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()},
                                         require_https=request.is_secure())
    return target if target and ok else default


def _act(request, back: str, call, done: str):
    """Run one service call for a POST; RoleError → 403, ValueError → message and back."""
    if not request.user.is_authenticated:
        return redirect_to_login(back)
    try:
        call()
    except RoleError as exc:
        return render(request, "library/refused.html", {"why": str(exc), "back": back}, status=403)
    except ValueError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, done)
    return redirect(back)


@role_required("viewer")
def candidate(request, candidate_id: int):
    from int21web.runs.llm import candidate_llm_exchange
    ctx = selectors.candidate_page(candidate_id, request.user)
    ctx["timing_json"] = _figure_json(ctx["timing_figure"])
    ctx["llm"] = candidate_llm_exchange(candidate_id=candidate_id)   # an LLM-written candidate's exchange
    return render(request, "library/candidate.html", ctx)


@require_POST
def comment(request, candidate_id: int):
    return _act(request, f"/candidates/{candidate_id}/#comments",
                lambda: services.comment_post(candidate_id=candidate_id, user=request.user,
                                              body=request.POST.get("body", "")), "Comment posted.")


@require_POST
def propose(request, candidate_id: int):
    return _act(request, f"/candidates/{candidate_id}/",
                lambda: services.promotion_propose(candidate_id=candidate_id, user=request.user,
                                                   note=request.POST.get("note", "")),
                "Proposed for promotion: it is in the review queue.")


@require_POST
def reevaluate(request, candidate_id: int):
    return _act(request, f"/candidates/{candidate_id}/",
                lambda: services.candidate_reevaluate(candidate_id=candidate_id, user=request.user),
                "Re-evaluation queued on a worker; reload to see it.")


@role_required("viewer")
def reviews(request):
    return render(request, "library/reviews.html", selectors.review_queue(request.user))


@require_POST
def approve(request, proposal_id: int):
    return _act(request, _back(request, "/reviews/"),
                lambda: services.review_approve(proposal_id=proposal_id, user=request.user,
                                                comment=request.POST.get("comment", "")),
                f"Approved proposal #{proposal_id}.")


@require_POST
def request_changes(request, proposal_id: int):
    return _act(request, _back(request, "/reviews/"),
                lambda: services.review_request_changes(proposal_id=proposal_id, user=request.user,
                                                        comment=request.POST.get("comment", "")),
                f"Changes requested on proposal #{proposal_id}.")


@require_POST
def recheck(request, proposal_id: int):
    return _act(request, _back(request, "/reviews/"),
                lambda: services.promotion_recheck(proposal_id=proposal_id, user=request.user),
                f"Held-out re-check of proposal #{proposal_id} queued.")


@role_required("viewer")
def library(request):
    return render(request, "library/library.html", selectors.library_index())


@role_required("viewer")
def kernel(request, kernel_id: int):
    ctx = selectors.kernel_detail(kernel_id)
    ctx["timing_json"] = _figure_json(ctx["timing_figure"])
    ctx["can_crown"] = has_role(request.user, "reviewer")
    ctx["manifest_json"] = json.dumps({k: v for k, v in ctx["m"].items() if k != "evaluations"}, indent=2,
                                      sort_keys=True)
    return render(request, "library/kernel.html", ctx)


@role_required("viewer")
def download(request, kernel_id: int):
    kv = selectors.kernel_detail(kernel_id)["kv"]
    resp = HttpResponse(evidence.zip_bytes(kv), content_type="application/zip")
    resp["Content-Disposition"] = f'attachment; filename="{evidence.zip_name(kv)}"'
    return resp


@require_POST
def crown(request, kernel_id: int):
    return _act(request, f"/library/{kernel_id}/",
                lambda: services.kernel_crown(kernel_id=kernel_id, user=request.user), "Champion changed.")


@role_required("viewer")
def knowledge(request):
    ctx = selectors.knowledge(request.GET.get("workload", ""), request.GET.get("target", ""))
    ctx["figure_json"] = _figure_json(ctx["figure"])
    return render(request, "library/knowledge.html", ctx)


# --------------------------------------------------------------------------- engines

@require_POST
def engine_propose(request, name: str):
    from int21web.library import engines
    return _act(request, f"/engines/{name}/",
                lambda: engines.engine_propose(engine_name=name, user=request.user, note=request.POST.get("note", "")),
                "Proposed for promotion as one unit: it is in the review queue.")


@role_required("viewer")
def engine_review(request, proposal_id: int):
    return render(request, "library/engine_review.html", selectors.engine_review(proposal_id, request.user))


@require_POST
def engine_approve(request, proposal_id: int):
    from int21web.library import engines
    return _act(request, f"/reviews/engines/{proposal_id}/",
                lambda: engines.engine_approve(proposal_id=proposal_id, user=request.user,
                                               comment=request.POST.get("comment", "")),
                f"Approved engine proposal #{proposal_id}.")


@require_POST
def engine_request_changes(request, proposal_id: int):
    from int21web.library import engines
    return _act(request, f"/reviews/engines/{proposal_id}/",
                lambda: engines.engine_request_changes(proposal_id=proposal_id, user=request.user,
                                                       comment=request.POST.get("comment", "")),
                f"Changes requested on engine proposal #{proposal_id}.")


@require_POST
def engine_recheck(request, proposal_id: int):
    from int21web.library import engines
    return _act(request, f"/reviews/engines/{proposal_id}/",
                lambda: engines.engine_recheck(proposal_id=proposal_id, user=request.user),
                f"Held-out re-checks of engine proposal #{proposal_id} queued.")


@role_required("viewer")
def engine_version(request, version_id: int):
    ctx = selectors.engine_version_detail(version_id)
    ctx["manifest_json"] = json.dumps({k: v for k, v in ctx["m"].items() if k != "evidence"}, indent=2, sort_keys=True)
    return render(request, "library/engine_version.html", ctx)


@role_required("viewer")
def engine_download(request, version_id: int):
    ver = selectors.engine_version_detail(version_id)["ver"]
    resp = HttpResponse(evidence.engine_zip_bytes(ver), content_type="application/zip")
    resp["Content-Disposition"] = f'attachment; filename="{evidence.engine_zip_name(ver)}"'
    return resp
