"""Pages for goals and runs. Thin: parse → one service or selector call → render."""
from django.shortcuts import render

from int21web.accounts.roles import role_required
from int21web.runs import selectors


@role_required("viewer")
def dashboard(request):
    return render(request, "runs/dashboard.html", selectors.dashboard())
