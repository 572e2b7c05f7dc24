"""The workers page. Thin: one selector, one template."""
from django.shortcuts import render

from int21web.accounts.roles import role_required
from int21web.fleet import selectors
from kernels import targets


@role_required("viewer")
def worker_list(request):
    return render(request, "fleet/workers.html", {
        "workers": selectors.workers(),
        "targets": [(t, selectors.live_worker_for(t)) for t in targets.names()],
        "embedded": selectors.settings.CELERY_EMBEDDED,
    })
