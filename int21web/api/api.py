"""The REST API: one NinjaAPI mounted at /api/ (schema /api/openapi.json, docs /api/docs).
Endpoints are thin: parse (the schemas), check the role, call one service or selector."""
from typing import Any

from django.apps import apps
from ninja import NinjaAPI, Router, Swagger

from int21web.api import errors, selectors
from int21web.api import outputs as o
from int21web.api.auth import AUTH, need
from int21web.api.errors import ApiError
from int21web.api.routes import goals, runs

# Swagger UI comes from ninja's bundled static files ("ninja" is an installed app); no
# validator badge, which would call validator.swagger.io from the browser.
api = NinjaAPI(title="INT21 Kernel Factory API", version="1", urls_namespace="api", auth=AUTH,
               parser=errors.StrictParser(), docs=Swagger(settings={"validatorUrl": None}),
               description="Goals, runs, candidates, guidance, reviews and the kernel library. "
                           "Auth: the browser session (CSRF on writes) or 'Authorization: Bearer <token>' "
                           "(manage.py api_token USER). Errors: {\"error\": ..., \"field\": ...}.")
errors.install(api)
api.add_router("", goals.router)
api.add_router("", runs.router)
from int21web.api.routes import ops              # /workloads: the built-in and the imported ones  # noqa: E402
api.add_router("", ops.router)
if apps.is_installed("int21web.library"):      # the review gate and the kernel library
    from int21web.api.routes import library
    api.add_router("", library.router)


@api.get("/me", response={200: o.Me, 401: o.Error},
         tags=["accounts"], summary="Who the API thinks you are, and your roles")
def me(request):
    from int21web.accounts.roles import roles_of
    user = request.auth
    return {"username": user.username, "roles": sorted(roles_of(user))}


@api.get("/workers", response={200: list[dict[str, Any]], **o.ERRORS},
         tags=["workers"], summary="Workers of the fleet: queues, targets, heartbeat, status")
def worker_list(request):
    need(request, "viewer", "reading workers")
    return selectors.workers()


fallback = Router()


@fallback.api_operation(["GET", "POST", "PUT", "PATCH", "DELETE"], "/{path:rest}", auth=None,
                        include_in_schema=False)
def unknown(request, rest: str):
    """Any other path under /api/ is a JSON 404 too, not the site's HTML page."""
    raise ApiError(404, f"no API endpoint /api/{rest} (see /api/docs)")


@fallback.api_operation(["GET", "POST", "PUT", "PATCH", "DELETE"], "/", auth=None, include_in_schema=False)
def root(request):
    """/api/ itself: where the endpoints are listed."""
    raise ApiError(404, "no API endpoint /api/: the endpoints are listed at /api/docs and /api/openapi.json")


api.add_router("", fallback)      # last: its pattern matches every path
