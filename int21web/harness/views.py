from django.http import Http404
from django.shortcuts import render

from kernels import targets, workloads
from kernels.spec import SpecError


def home(request):
    target_rows = []
    for name in targets.names():
        tgt = targets.get(name)
        ok, why = tgt.available()
        can_run, why_not = tgt.can_run() if ok else (False, why)
        target_rows.append({"name": name, "available": ok, "runs": can_run, "why": why or why_not})
    return render(request, "harness/home.html", {
        "workloads": [wl.describe() for wl in workloads.all_workloads()],
        "targets": target_rows,
    })


def workload_detail(request, name):
    try:
        wl = workloads.get(name)
    except SpecError:
        raise Http404(f"No workload named {name!r}")
    from kernels.limits import largest_note
    return render(request, "harness/workload.html", {"w": wl.describe(), "limit": largest_note(wl)})
