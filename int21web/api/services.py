"""Writes of the API app: tokens."""
from __future__ import annotations

import hashlib
import secrets

from django.utils import timezone

from int21web.api.models import ApiToken

PREFIX = "i21_"


def token_hash(token: str) -> str:
    # Tokens are 256 random bits: a fast hash is enough (nothing to brute-force), and it lets
    # the lookup be one indexed query.
    return hashlib.sha256(token.encode()).hexdigest()


def token_create(*, user, name: str = "") -> tuple[ApiToken, str]:
    """A new token for ``user``; returns the row and the token, which is not stored anywhere."""
    token = PREFIX + secrets.token_urlsafe(32)
    row = ApiToken.objects.create(user=user, name=name, prefix=token[:len(PREFIX) + 4], key_hash=token_hash(token))
    return row, token


def token_revoke(*, token_id: int) -> bool:
    return bool(ApiToken.objects.filter(pk=token_id, revoked_at__isnull=True).update(revoked_at=timezone.now()))


def token_user(token: str):
    """The active user a live token belongs to, or None. Marks the token used (at most once a minute)."""
    if not token or len(token) > 200:
        return None
    row = (ApiToken.objects.select_related("user")
           .filter(key_hash=token_hash(token), revoked_at__isnull=True).first())
    if row is None or not row.user.is_active:
        return None
    now = timezone.now()
    if row.last_used_at is None or (now - row.last_used_at).total_seconds() > 60:
        ApiToken.objects.filter(pk=row.pk).update(last_used_at=now)
    return row.user
