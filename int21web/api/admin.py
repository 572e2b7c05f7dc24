from django.contrib import admin

from int21web.api.models import ApiToken


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens are made with `manage.py api_token USER` (shown once); here they are seen and revoked."""

    list_display = ("prefix", "user", "name", "created_at", "last_used_at", "revoked_at")
    list_filter = ("revoked_at",)
    search_fields = ("user__username", "name", "prefix")
    readonly_fields = ("user", "prefix", "key_hash", "created_at", "last_used_at")

    def has_add_permission(self, request):
        return False
