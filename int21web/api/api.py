"""The REST API: one NinjaAPI mounted at /api/ (schema /api/openapi.json, docs /api/docs).
Endpoints are thin: parse (the schemas), check the role, call one service or selector."""
from ninja import NinjaAPI

from int21web.api import errors
from int21web.api.auth import AUTH
from int21web.api.routes import goals, runs

api = NinjaAPI(title="INT21 Kernel Factory API", version="1", urls_namespace="api", auth=AUTH, parser=errors.StrictParser(),
               description="Goals, runs, candidates, guidance, reviews and the kernel library. "
                           "Auth: the browser session (CSRF on writes) or 'Authorization: Bearer <token>' "
                           "(manage.py api_token USER). Errors: {\"error\": ..., \"field\": ...}.")
errors.install(api)
api.add_router("", goals.router)
api.add_router("", runs.router)


@api.get("/me", tags=["accounts"], summary="Who the API thinks you are, and your roles")
def me(request):
    from int21web.accounts.roles import roles_of
    user = request.auth
    return {"username": user.username, "roles": sorted(roles_of(user))}
