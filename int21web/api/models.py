"""API tokens. Only a SHA-256 of each token is stored: the token itself is shown once, when
it is made (`manage.py api_token USER`), and cannot be recovered from the database."""
from django.conf import settings
from django.db import models


class ApiToken(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, blank=True, help_text="what the token is for")
    prefix = models.CharField(max_length=12, help_text="the token's first characters, to tell tokens apart")
    key_hash = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the token, hex")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]

    def __str__(self):
        return f"{self.prefix}… ({self.user})"
