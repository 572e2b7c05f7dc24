"""``can``: the signed-in user's roles for templates (``{% if can.engineer %}``), so a page
shows only the actions its reader may take (the views check again)."""
from django.utils.functional import SimpleLazyObject

from int21web.accounts.roles import ROLES, has_role


def roles(request) -> dict:
    user = getattr(request, "user", None)
    return {"can": SimpleLazyObject(lambda: {r: has_role(user, r) for r in ROLES})}
