"""Input no page can store: a NUL character in the path, a query string or a form field
(PostgreSQL's text refuses it, and the query would fail as a 500). Refused at the door with a
400 that says so; the API's bodies have their own check, per field (api/errors.py)."""
from django.http import HttpResponseBadRequest, JsonResponse
from django.utils.html import escape


class RefuseNul:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if "\x00" in request.path:
            if request.path.startswith("/api/"):
                return JsonResponse({"error": "the path may not contain NUL characters"}, status=400)
            return HttpResponseBadRequest('<p class="error" role="alert">The address may not contain NUL '
                                          "characters</p>")
        if not request.path.startswith("/api/"):
            where = _nul_in(request.GET) or (_nul_in(request.POST) if request.method == "POST" else None)
            if where:
                return HttpResponseBadRequest(f'<p class="error" role="alert">{escape(where)}: text may not '
                                              "contain NUL characters</p>")
        return self.get_response(request)


def _nul_in(data) -> str | None:
    try:
        items = list(data.lists())
    except Exception:   # a body too large or malformed: the view's own parsing answers (a 400)
        return None
    for key, values in items:
        if "\x00" in key or any("\x00" in v for v in values):
            return key.replace("\x00", "")[:60] or "a field"
    return None
