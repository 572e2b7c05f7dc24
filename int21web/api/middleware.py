"""Every error under /api/ is the API's JSON error shape (``{"error": ...}``), including the
ones Django answers before an endpoint runs: a method the path does not take (405, with its
Allow header kept), a body over DATA_UPLOAD_MAX_MEMORY_SIZE (400), a CSRF refusal (403)."""
from http import HTTPStatus

from django.http import JsonResponse

DOCS = ("/api/docs", "/api/openapi.json")


class JsonApiErrors:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if (response.status_code < 400 or not request.path.startswith("/api/") or request.path.startswith(DOCS)
                or response.get("Content-Type", "").startswith("application/json")):
            return response
        status = response.status_code
        text = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else "error"
        if status == 405:
            text = f"{request.method} is not allowed on {request.path}; it takes {response.get('Allow', 'none')}"
        elif status == 400:
            text = "the request could not be read (too large, or malformed)"
        elif status == 403:
            text = "refused: " + (response.reason_phrase or "forbidden") + " (a session write needs the CSRF token)"
        json = JsonResponse({"error": text}, status=status)
        if response.has_header("Allow"):
            json["Allow"] = response["Allow"]
        return json
