"""Who is calling: a token (``Authorization: Bearer <token>``) or the browser's session
(CSRF-checked on unsafe methods). Neither: ninja answers 401. Roles are checked per
endpoint with :func:`need`, the same ``int21web.accounts.roles`` check the pages use."""
from __future__ import annotations

from django.conf import settings
from ninja.errors import HttpError
from ninja.security import APIKeyCookie, HttpBearer
from ninja.utils import check_csrf

from int21web.accounts.roles import require
from int21web.api import services

SAFE_METHODS = ("GET", "HEAD", "OPTIONS", "TRACE")


class TokenAuth(HttpBearer):
    def authenticate(self, request, token):
        user = services.token_user(token)
        if user is not None:
            request.user = user     # so everything downstream sees the token's user
        return user


class SessionAuth(APIKeyCookie):
    """Django's session; an unsafe method must carry the CSRF token (header ``X-CSRFToken``).
    Unlike ninja's own SessionAuth, an anonymous request is a 401, not a CSRF 403."""

    param_name = settings.SESSION_COOKIE_NAME

    def _get_key(self, request):
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated:
            return None
        if request.method not in SAFE_METHODS and not getattr(request, "_ninja_csrf_exempt", False):
            if check_csrf(request):
                raise HttpError(403, "CSRF check failed: send the csrftoken cookie's value as X-CSRFToken")
        return request.COOKIES.get(self.param_name)

    def authenticate(self, request, key):
        return request.user if request.user.is_authenticated else None


AUTH = [TokenAuth(), SessionAuth()]


def need(request, role: str, action: str):
    """The calling user, if they hold ``role``; otherwise RoleError (→ 403 naming the role)."""
    user = request.auth
    require(user, role, action)
    return user
