"""Roles are Django groups: viewer (read), engineer (goals, runs, guidance), reviewer
(approve / request changes), admin (everything). One check, used by views, the API and
the websocket consumers alike."""
from __future__ import annotations

from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.http import HttpResponseForbidden
from django.template.loader import render_to_string

ROLES = ("viewer", "engineer", "reviewer", "admin")
DESCRIPTIONS = {
    "viewer": "sees goals, runs, candidates, the library and knowledge",
    "engineer": "writes goals, starts, pauses and stops runs, posts guidance",
    "reviewer": "approves candidates or requests changes",
    "admin": "everything, and the admin site",
}


class RoleError(PermissionError):
    """The user lacks the role an action needs; the message says which."""


def roles_of(user) -> set[str]:
    if user is None or not user.is_authenticated or not user.is_active:
        return set()
    if user.is_superuser:
        return set(ROLES)
    names = getattr(user, "_int21_roles", None)
    if names is None:
        names = set(user.groups.filter(name__in=ROLES).values_list("name", flat=True))
        if "admin" in names:
            names = set(ROLES)
        user._int21_roles = names
    return names


def has_role(user, role: str) -> bool:
    """Every role can read; the others must be granted (admin holds them all)."""
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}")
    held = roles_of(user)
    return bool(held) if role == "viewer" else role in held


def require(user, role: str, action: str) -> None:
    if not has_role(user, role):
        raise RoleError(f"{action} needs the {role} role")


def role_required(role: str, action: str = "this page"):
    """View decorator: anonymous users go to the login page; users without the role get a
    403 page that names the role they would need."""
    def decorate(view):
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if not has_role(request.user, role):
                page = "_403.html" if request.headers.get("HX-Request") else "403.html"   # htmx: where they acted
                body = render_to_string(page, {"role": role, "action": action}, request=request)
                return HttpResponseForbidden(body)
            return view(request, *args, **kwargs)
        return wrapper
    return decorate
